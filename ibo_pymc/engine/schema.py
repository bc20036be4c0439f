"""The fit schema: what a saved fit holds, for every task, and the one reader of older files.

An :class:`arviz.InferenceData` (NetCDF on disk) with these groups (dims ``chain``, ``draw``, ``component``,
``family`` and the task's observation unit, e.g. ``round``):

``posterior``
    draws of the family-marginalised model: every parameter of any family (a prior draw where the draw's
    family lacks it), and ``family_draw``, the index of each draw's family (attr ``labels``: the families,
    comma-separated).
``conditional_posterior``
    each component's conditional draws (a component is a family, or a stratum of one): a parameter of
    exactly one family as (chain, draw); a parameter of several as (chain, draw, component), NaN where a
    component's family lacks it.
``log_likelihood``
    one variable, named by the attr ``observed`` (``theta2``, ``choices``), per observation unit at the
    marginal draws: what PSIS-LOO reads. On disk it is packed in 16-bit integers (CF ``scale_factor`` and
    ``add_offset``, decoded on reading; :func:`ibo_pymc.io.write_fit`) unless the fit was saved with
    ``full=True``.
``component_evidence``
    per component: ``component_family``, ``log_evidence`` (weighted by the component's share of the prior
    where it is a stratum), ``log_evidence_rel_error``, ``probability``, ``r_hat``, ``ess_bulk``,
    ``ess_tail`` (and, from the family-by-family engine, ``method`` -- bridge or laplace --, ``thin``,
    ``divergences``, and ``sampling_error`` where NUTS sampled an approximation of the density: its largest
    distance from the density at the draws, in nats); per family: ``family_log_evidence``,
    ``family_log_evidence_error``,
    ``family_probability``.
``observed_data``, ``constant_data``
    the data, as the task lays it out.
``sample_stats``
    the sampler's statistics (:data:`~ibo_pymc.engine.assembly.STATS`: ``diverging``, ``step_size``, ``n_steps``,
    the tree depth, the log-density, ``energy``; with dim ``sampled_component`` where each family had its own run:
    one entry per NUTS run, so a family split into strata has one per stratum, labelled ``family[i/n]``).
``posterior_predictive``
    where the task simulates: the observed quantity at each draw. Drawn on demand
    (:meth:`~ibo_pymc.engine.model.IBOModelBase.posterior_predictive`, from the fit's own seed stream); a
    saved file holds it only when saved with ``full=True`` (``ibo-sample --save-full``). Hotspot fits saved
    before saving became compact hold it, with the draws the on-demand predictive gives.

The attrs of every group: ``ibo_pymc_format``, ``ibo_pymc_version``, ``task``, ``observed``, ``subject``,
``model``, the configuration (``config``, JSON) and its hash (``config_hash``), ``components`` (JSON: per
component its family and label; where the per-family plan split a family into strata, which it merges back into
one component, ``strata``: each stratum's box on the unconstrained scale, prior share, evidence, probability
within the family and convergence), the
log model evidence ``log_evidence`` with the family marginalised, its ``log_evidence_error`` and
``log_evidence_method``; and the task's own (e.g. ``context``, ``surrogate``; ``user_id``).

:func:`read_fit` reads a saved fit and brings an older file to this schema, so that everything downstream
(LOO, BMS, summaries, plots) reads one layout. Every task writes format 4. Older formats: hotspot fits 2
(evidences as JSON attrs) and 3 (``component_evidence``) already have the layout and gain the attrs ``task``
and ``observed``; grid-search fits of format 1 (attr ``format``; conditional draws as ``<name>_given_family``
in ``posterior``; ``family_evidence``) are rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from ibo_pymc.errors import InputError

#: the fit schema's format: every task's fits are written in it (hotspot fits before it: formats 2 and 3)
FORMAT = 4


def open_fit(path):
    """A saved fit's InferenceData as written (any format), loaded into memory; a missing or unreadable file
    is an :class:`~ibo_pymc.errors.InputError` naming it."""
    import arviz as az

    path = Path(path)
    if not path.is_file():
        raise InputError("no such file; expected a NetCDF fit written by ibo-sample", path=path)
    try:
        idata = az.from_netcdf(str(path), engine="h5netcdf")
        idata.load()
    except Exception as exc:  # noqa: BLE001 - any reader failure means a bad file
        raise InputError(
            f"cannot read NetCDF ({type(exc).__name__}); expected a fit written by ibo-sample", path=path
        ) from None
    return idata


def read_fit(path):
    """A saved fit as :class:`arviz.InferenceData` in the fit schema (older formats brought to it)."""
    idata = open_fit(path)
    try:
        return upgrade(idata)
    except (KeyError, ValueError, AttributeError, TypeError) as exc:
        raise InputError(f"not an ibo-pymc fit ({type(exc).__name__}: {exc})", path=path) from None


def upgrade(idata):
    """``idata`` in the fit schema: unchanged if it is, else rewritten from an older format."""
    if "posterior" not in idata.groups():
        raise KeyError("posterior")
    attrs = dict(idata.posterior.attrs)
    if "ibo_pymc_format" in attrs:
        if "task" not in attrs:  # hotspot formats 2 and 3
            for g in idata.groups():
                idata[g].attrs.update({"task": "hotspot", "observed": "theta2"})
        return idata
    if attrs.get("task") == "gridsearch" and int(attrs.get("format", 0)) == 1:
        return _gridsearch_format_1(idata)
    raise KeyError("ibo_pymc_format")


def _gridsearch_format_1(idata):
    import arviz as az

    post, ev = idata.posterior, idata["family_evidence"]
    attrs = dict(post.attrs)
    fams = [str(f) for f in ev["family"].values]
    given = [v for v in post.data_vars if str(v).endswith("_given_family")]
    cond = {str(v)[: -len("_given_family")]: post[v].rename(family="component") for v in given}
    if "beta_given_UCB" in post:
        cond["beta"] = post["beta_given_UCB"]
    keep = [v for v in post.data_vars if v not in given and v != "beta_given_UCB"]
    posterior = post[keep].drop_vars("family", errors="ignore")
    if "family_draw" in posterior:
        posterior["family_draw"].attrs["labels"] = ",".join(fams)
    config = json.loads(attrs["config"])
    config["target_rhat"], config["min_ess"] = config.pop("r_hat", 1.01), config.pop("ess", 400.0)
    from ibo_pymc.engine.results import family_evidence_dataset

    evidence = family_evidence_dataset(
        fams,
        ev["probability"].values,
        log_evidence=ev["log_evidence"].values,
        rel_error=ev["rel_error"].values,
        **{c: ev[c].values for c in ("r_hat", "ess_bulk", "ess_tail", "method", "thin", "divergences")},
    )
    groups = {
        "posterior": posterior,
        "conditional_posterior": xr.Dataset(cond).assign_coords(component=fams),
        "log_likelihood": idata.log_likelihood,
        "component_evidence": evidence,
        "observed_data": idata.observed_data,
    }
    if "sample_stats" in idata.groups():
        groups["sample_stats"] = idata.sample_stats.rename(sampled_family="sampled_component")
    out = az.InferenceData(**groups)
    from ibo_pymc.engine.results import log_evidence

    lme = log_evidence(out).loc["all"]
    new = {k: v for k, v in attrs.items() if k not in ("format", "family_probabilities")}
    new.update(
        {
            "ibo_pymc_format": FORMAT,
            "observed": "choices",
            "model": attrs["surrogate"],
            "config": json.dumps(config, sort_keys=True),
            "log_evidence": float(lme["log_evidence"]),
            "log_evidence_error": float(lme["error"]) if np.isfinite(lme["error"]) else float("nan"),
            "log_evidence_method": "bridge sampling of each family's conditional posterior (Laplace where screened)",
            "components": json.dumps([{"family": f, "label": f} for f in fams]),
            "upgraded_from_format": 1,
        }
    )
    for g in out.groups():
        out[g].attrs.clear()
        out[g].attrs.update(new)
    return out
