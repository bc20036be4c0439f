"""A fit's InferenceData from its families' conditional posteriors: the one fit schema (:mod:`.schema`).

Each marginal draw gets a family in proportion to ``P(family | y)`` (exactly
``round(P x draws)`` per chain, at random positions: largest-remainder
rounding), that family's conditional draw for the parameters it has, and a
prior draw for a parameter it does not have (UCB's beta under a draw of EI,
say), so that every posterior variable has a value at every draw.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.engine.mixing import largest_remainder, softmax
from ibo_pymc.engine.results import family_evidence_dataset, sum_with_error
from ibo_pymc.engine.schema import FORMAT

#: sampler statistics kept per sampled family (the tree depth and the log-density under nutpie's names,
#: ``depth`` and ``logp``, and PyMC's, ``tree_depth`` and ``lp``); the others (nutpie reports 13) are not kept,
#: as a saved fit's writing time grows with its number of variables
STATS = ("diverging", "step_size", "n_steps", "depth", "tree_depth", "logp", "lp", "energy")


def _stats(st) -> xr.Dataset:
    keep = [v for v in STATS if v in st]
    ds = xr.Dataset({v: st[v] for v in keep})
    ds = ds.drop_vars([c for c in ds.coords if c not in ("chain", "draw")])
    return ds.assign_coords(draw=np.arange(ds.sizes["draw"]), chain=np.arange(ds.sizes["chain"]))


def marginal_draws(model, fits, probabilities, rng: np.random.Generator):
    """(family index per draw (chain, draw), natural-scale parameters of the marginal draws, each family's
    conditional draws on the natural scale)."""
    fams = [f.family for f in fits]
    C, D = fits[0].draws.shape[:2]
    cond = {}
    for f in fits:
        priors = model.priors(f.family)
        cond[f.family] = {n: priors[n].from_unconstrained(f.draws[..., i]) for i, n in enumerate(f.names)}
    counts = largest_remainder(probabilities, D)
    family = np.stack([rng.permutation(np.repeat(np.arange(len(fams)), counts)) for _ in range(C)])
    names = list(dict.fromkeys(n for f in fits for n in f.names))
    prior_draw = {}
    for n in names:  # a parameter that some family lacks: a prior draw where the draw's family lacks it
        if not all(n in cond[f] for f in fams):
            owner = next(f for f in fams if n in cond[f])
            prior_draw[n] = model.priors(owner)[n].draw(rng, size=(C, D))
    params = {n: np.choose(family, [cond[f][n] if n in cond[f] else prior_draw[n] for f in fams]) for n in names}
    return family, params, cond


def pointwise_loglik(model, family: np.ndarray, params: dict, fams) -> np.ndarray:
    """Each draw's log-likelihood per observation unit under its own family: ``family.shape + (units,)``
    (draws laid out as (chain, draw), or flat)."""
    ll = None
    for k, f in enumerate(fams):
        sel = family == k
        if not sel.any():
            continue
        vals = model.loglik(f, {n: v[sel] for n, v in params.items()})
        if ll is None:
            ll = np.empty(family.shape + (vals.shape[-1],))
        ll[sel] = vals
    return ll


def _component(fit) -> dict:
    """A component's entry in the ``components`` attribute: its family and label, and for a family split into
    strata each stratum's box, prior share, evidence, probability within the family and convergence."""
    out = {"family": fit.family, "label": fit.label}
    if fit.strata:
        within = softmax(np.array([s.log_evidence + s.log_share for s in fit.strata]))
        out["strata"] = [
            {
                **s.component.to_json(),
                "log_share": s.log_share,
                "log_evidence": s.log_evidence,
                "rel_error": s.rel_error,
                "probability_in_family": float(p),
                "r_hat": s.r_hat,
                "ess_bulk": s.ess_bulk,
                "ess_tail": s.ess_tail,
                "thin": s.thin,
                "divergences": s.divergences,
            }
            for s, p in zip(fit.strata, within)
        ]
    return out


def evidence_group(fits, probabilities) -> xr.Dataset:
    """The ``component_evidence`` group: one row per family (a family split into strata is merged into one, its
    strata listed in the ``components`` attribute)."""
    cols = {
        c: [getattr(f, a) for f in fits]
        for c, a in (
            ("log_evidence", "log_evidence"),
            ("rel_error", "rel_error"),
            ("r_hat", "r_hat"),
            ("ess_bulk", "ess_bulk"),
            ("ess_tail", "ess_tail"),
            ("method", "method"),
            ("thin", "thin"),
            ("divergences", "divergences"),
        )
    }
    errors = np.array([f.sampling_error for f in fits], float)
    return family_evidence_dataset(
        [f.family for f in fits], probabilities, **cols, sampling_error=errors if np.isfinite(errors).any() else None
    )


def assemble(model, fits, rng: np.random.Generator):
    """The fit's :class:`arviz.InferenceData` in the fit schema (:mod:`.schema`)."""
    import arviz as az

    from ibo_pymc import __version__

    fams = [f.family for f in fits]
    probabilities = softmax(np.array([f.log_evidence for f in fits], float))
    family, params, cond = marginal_draws(model, fits, probabilities, rng)
    C, D = family.shape
    chain, draw = np.arange(C), np.arange(D)
    ll = pointwise_loglik(model, family, params, fams)
    unit, units = model.unit_coords()

    post = {n: (("chain", "draw"), v) for n, v in params.items()}
    post["family_draw"] = (("chain", "draw"), family.astype(np.int64), {"labels": ",".join(fams)})
    posterior = xr.Dataset(post, coords={"chain": chain, "draw": draw})
    conditional = {}
    for n in params:
        having = [f for f in fams if n in cond[f]]
        if len(having) == 1:  # one family's own parameter
            conditional[n] = (("chain", "draw"), cond[having[0]][n])
        else:
            conditional[n] = (
                ("chain", "draw", "component"),
                np.stack([cond[f].get(n, np.full((C, D), np.nan)) for f in fams], axis=-1),
            )
    conditional_posterior = xr.Dataset(conditional, coords={"chain": chain, "draw": draw, "component": fams})
    conditional_posterior.attrs["note"] = "each family's conditional posterior p(params | data, family)"
    log_lik = xr.Dataset(
        {model.observed: (("chain", "draw", unit), ll)}, coords={"chain": chain, "draw": draw, unit: units}
    )
    groups = {
        "posterior": posterior,
        "conditional_posterior": conditional_posterior,
        "log_likelihood": log_lik,
        "component_evidence": evidence_group(fits, probabilities),
        **model.data_groups(),
    }
    # one entry per NUTS run: a family's, or each stratum's of a family split into strata
    sampled = [s for f in fits for s in (f.strata or [f]) if s.stats is not None]
    if sampled:
        groups["sample_stats"] = xr.concat(
            [_stats(f.stats) for f in sampled], dim=pd.Index([f.label for f in sampled], name="sampled_component")
        )
    idata = az.InferenceData(**groups)
    total, err = sum_with_error(np.array([f.log_evidence for f in fits]), np.array([f.rel_error for f in fits]))
    attrs = {
        "ibo_pymc_format": FORMAT,
        "ibo_pymc_version": __version__,
        "task": model.task,
        "observed": model.observed,
        **model.fit_attrs(),
        "config": model.config.to_json(),
        "config_hash": model.config.key(),
        "log_evidence": total - math.log(len(fams)),
        "log_evidence_error": err,
        "log_evidence_method": "bridge sampling of each family's conditional posterior (Laplace where screened)",
        "components": json.dumps([_component(f) for f in fits]),
    }
    for g in idata.groups():
        idata[g].attrs.update(attrs)
    return idata
