"""A fit's InferenceData, assembled from the conditional NUTS draws and the component evidences.

Groups (dims ``chain``, ``draw``, ``family``, ``round``, ``component``):

``posterior``
    draws of the family-marginalised model: each draw gets a component
    (exactly ``round(P(component | y) x draws)`` per chain, at random
    positions), hence a family (``family_draw``), the parameters of that
    component's conditional draw, and prior draws for the other families'
    shape parameters; ``family_prob`` holds the per-draw ``P(k | y, params)``
    (Rao-Blackwellised, as ``pymc_extras.recover_marginals`` recovers a
    marginalised variable; equal to it, tested).
``conditional_posterior``
    the NUTS draws of each component's conditional posterior.
``log_likelihood``, ``observed_data``, ``constant_data``
    pointwise log-likelihood at each draw, the rounds. The posterior predictive theta2 is drawn on demand
    (:func:`predictive`, from the fit's own seed stream).
``sample_stats``
    the sampler's statistics (divergences, tree depth, ...).
``component_evidence``
    per component: bridge-sampled log evidence, its relative error, posterior
    probability, worst R-hat / smallest ESS; per family: log evidence, its
    standard error and probability.

The attrs of every group hold the format, package version, subject, model,
the configuration (:class:`~ibo_pymc.tasks.hotspot.model.config.FitConfig`), its hashes,
the thinning and the components, so that a saved file rebuilds its fit, and
the log model evidence ``log_evidence`` = log p(theta2 | model) with the family
marginalised, its standard error ``log_evidence_error`` and
``log_evidence_method`` (:func:`ibo_pymc.engine.results.log_evidence`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ibo_pymc.engine.mixing import largest_remainder, logsumexp, softmax
from ibo_pymc.engine.results import log_evidence, sum_with_error
from ibo_pymc.engine.schema import FORMAT as SCHEMA_FORMAT
from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
from ibo_pymc.tasks.hotspot.model import pointwise
from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_random
from ibo_pymc.tasks.hotspot.model.parameters import internal_name

#: the fit schema's format (:mod:`ibo_pymc.engine.schema`); hotspot fits were format 2 (evidences as JSON attrs)
#: and 3 (the same layout as now, without the attrs ``task`` and ``observed``), read by the schema's one reader
FORMAT = SCHEMA_FORMAT


@dataclass(frozen=True)
class FitOutcome:
    """What the fitting loop produced: components, their stacked conditional draws, the sampler's
    statistics, bridge-sampling results, component probabilities, diagnostics and the thinning."""

    components: tuple
    cond: dict
    stats: xr.Dataset
    evidence: list
    probabilities: np.ndarray
    diagnostics: dict
    thin: int


def marginal_draws(sd, parameters, out: FitOutcome, rng: np.random.Generator) -> tuple[np.ndarray, dict, dict]:
    """Draws of the marginalised model: (family index per draw, shape parameter per family, shared parameters)."""
    comps, cond = out.components, out.cond
    fams = sd.families
    C, D = cond["gamma"].shape[:2]
    counts = largest_remainder(out.probabilities, D)
    comp = np.stack([rng.permutation(np.repeat(np.arange(len(comps)), counts)) for _ in range(C)])
    comp_family = np.array([fams.index(c.family) for c in comps])
    family = comp_family[comp]
    per = [parameters.draws(comps, cond, k) for k in range(len(comps))]
    shared = {n: np.choose(comp, [p[n] for p in per]) for n in ("gamma", "w", "tau_neg", "tau_pos")}
    own = np.choose(comp, [p["param"] for p in per])
    params = {k: np.where(family == k, own, get_family(f).prior.draw(rng, size=(C, D))) for k, f in enumerate(fams)}
    return family, params, shared


def assemble(sd, config, parameters, out: FitOutcome, rng_mix: np.random.Generator):
    """The fit's :class:`arviz.InferenceData` (module docstring)."""
    import arviz as az

    fams = sd.families
    C, D = out.cond["gamma"].shape[:2]
    family, params, shared = marginal_draws(sd, parameters, out, rng_mix)
    # every family's log-likelihood at every draw's parameters (Rao-Blackwellised family probabilities), and the
    # pointwise log-likelihood under each draw's own family
    lik = np.stack([parameters.loglik(sd, f, {"param": params[k], **shared}, summed=True) for k, f in enumerate(fams)])
    family_prob = np.moveaxis(softmax(lik, axis=0), 0, -1)  # (C, D, F)
    ll_draw = np.empty(family.shape + (sd.obs.n_rounds,))
    for k, f in enumerate(fams):
        m = family == k
        if m.any():
            ll_draw[m] = parameters.loglik(sd, f, {"param": params[k][m], **{n: v[m] for n, v in shared.items()}})
    chain, draw = np.arange(C), np.arange(D)
    idata = az.InferenceData(
        posterior=_posterior_group(sd, parameters, family, params, shared, family_prob),
        conditional_posterior=_conditional_group(out, chain, draw),
        **_round_groups(sd, ll_draw),
        sample_stats=out.stats.assign_coords(chain=chain, draw=draw),
        component_evidence=evidence_group(out, fams),
    )
    for g in idata.groups():
        idata[g].attrs.update(_fit_attrs(sd, config, out))
    lme = log_evidence(idata).loc["all"]
    evidence_attrs = {
        "log_evidence": float(lme["log_evidence"]),
        "log_evidence_error": float(lme["error"]),
        "log_evidence_method": "bridge sampling of each family's conditional posterior",
    }
    for g in idata.groups():
        idata[g].attrs.update(evidence_attrs)
    return idata


def predictive(sd, parameters, posterior: xr.Dataset, rng: np.random.Generator) -> np.ndarray:
    """Posterior predictive theta2 (chain, draw, round; rounds in the subject's order) under each draw's family,
    at the draws of a fit's ``posterior`` group."""
    family = posterior["family_draw"].values
    params = {k: posterior[get_family(f).var_name].values for k, f in enumerate(sd.families)}
    shared = {"gamma": posterior["gamma"].values, "w": posterior["w"].values}
    shared = parameters.with_taus(shared | {internal_name(n): posterior[n].values for n in parameters.variant.taus})
    ts = np.zeros(family.shape + (sd.obs.n_rounds,))
    for k, f in enumerate(sd.families):
        mask = family == k
        if mask.any():
            ts[mask] = pointwise.theta_star(sd, f, params[k][mask], shared["tau_neg"][mask], shared["tau_pos"][mask])
    return sd.to_subject_order(wc_mixture_random(ts, shared["gamma"][..., None], shared["w"][..., None], rng=rng))


def _posterior_group(sd, parameters, family, params: dict, shared: dict, family_prob) -> xr.Dataset:
    """The family-marginalised draws: each family's shape parameter, the shared ones, the family of each draw
    and the Rao-Blackwellised ``family_prob``."""
    fams = sd.families
    post = {get_family(f).var_name: (("chain", "draw"), params[k]) for k, f in enumerate(fams)}
    post["gamma"] = (("chain", "draw"), shared["gamma"])
    post["w"] = (("chain", "draw"), shared["w"])
    for name in parameters.variant.taus:
        post[name] = (("chain", "draw"), shared[internal_name(name)])
    # the family of each draw; named family_draw because "family" is the dim of family_prob
    post["family_draw"] = (("chain", "draw"), family.astype(np.int64), {"labels": ",".join(fams)})
    post["family_prob"] = (("chain", "draw", "family"), family_prob)
    C, D = family.shape
    return xr.Dataset(post, coords={"chain": np.arange(C), "draw": np.arange(D), "family": list(fams)})


def _conditional_group(out: FitOutcome, chain, draw) -> xr.Dataset:
    conditional = xr.Dataset(
        {n: (("chain", "draw", "component") if a.ndim == 3 else ("chain", "draw"), a) for n, a in out.cond.items()},
        coords={"chain": chain, "draw": draw, "component": [c.label for c in out.components]},
    )
    conditional.attrs["note"] = (
        "NUTS draws of each component's conditional posterior p(params | theta2, family, stratum)"
    )
    return conditional


def _round_groups(sd, ll_draw) -> dict[str, xr.Dataset]:
    """The groups indexed by round, in the subject's order: ``log_likelihood``, ``observed_data``,
    ``constant_data``."""
    obs = sd.obs
    rounds = np.asarray(obs.session_id)
    C, D = ll_draw.shape[:2]
    rc = {"chain": np.arange(C), "draw": np.arange(D), "round": rounds}
    return {
        "log_likelihood": xr.Dataset({"theta2": (("chain", "draw", "round"), sd.to_subject_order(ll_draw))}, coords=rc),
        "observed_data": xr.Dataset({"theta2": ("round", np.asarray(obs.theta2, float))}, coords={"round": rounds}),
        "constant_data": xr.Dataset(
            {
                "delta_r1": ("round", np.asarray(obs.delta_r1, float)),
                "round_index": ("round", np.asarray(obs.round_index)),
            },
            coords={"round": rounds},
        ),
    }


def _fit_attrs(sd, config, out: FitOutcome) -> dict:
    """What every group's attrs hold so that a saved file rebuilds its fit (module docstring)."""
    from ibo_pymc import __version__
    from ibo_pymc.tasks.hotspot.forward.argmax import TABLE_FORMAT

    return {
        "ibo_pymc_format": FORMAT,
        "task": "hotspot",
        "observed": "theta2",
        "table_format": TABLE_FORMAT,
        "ibo_pymc_version": __version__,
        "subject": int(sd.obs.subject),
        "user_id": int(sd.obs.user_id),
        "model": config.model,
        "config": json.dumps(config.to_dict()),
        "config_hash": config.key(),
        "model_config_hash": config.model_key(),
        "thin": int(out.thin),
        "components": json.dumps([c.to_dict() | {"label": c.label, "var_name": c.var_name} for c in out.components]),
    }


def _family_error(log_ev, evid, comps, family) -> float:
    k = [i for i, c in enumerate(comps) if c.family == family]
    return sum_with_error(np.array([log_ev[i] for i in k]), np.array([evid[i].rel_error for i in k]))[1]


def evidence_group(out: FitOutcome, fams) -> xr.Dataset:
    """The ``component_evidence`` group: per-component evidences, probabilities, diagnostics; per-family sums."""
    comps, evid, diag = out.components, out.evidence, out.diagnostics
    log_ev = [e.log_evidence + c.log_width_fraction for c, e in zip(comps, evid)]
    ds = xr.Dataset(
        {
            "component_family": ("component", [c.family for c in comps]),
            "log_evidence": ("component", np.array(log_ev, float)),
            "log_evidence_rel_error": ("component", np.array([e.rel_error for e in evid], float)),
            "probability": ("component", np.asarray(out.probabilities, float)),
            "r_hat": ("component", np.array([diag[c.label]["r_hat"] for c in comps], float)),
            "ess_bulk": ("component", np.array([diag[c.label]["ess_bulk"] for c in comps], float)),
            "ess_tail": ("component", np.array([diag[c.label]["ess_tail"] for c in comps], float)),
            "family_log_evidence": (
                "family",
                np.array([logsumexp([v for c, v in zip(comps, log_ev) if c.family == f]) for f in fams], float),
            ),
            "family_log_evidence_error": (
                "family",
                np.array([_family_error(log_ev, evid, comps, f) for f in fams], float),
            ),
            "family_probability": (
                "family",
                np.bincount(
                    [list(fams).index(c.family) for c in comps], weights=out.probabilities, minlength=len(fams)
                ).astype(float),
            ),
        },
        coords={"component": [c.label for c in comps], "family": list(fams)},
    )
    ds.attrs["note"] = (
        "per component (a family, or a stratum of one): bridge-sampled log evidence under its uniform prior "
        "(strata weighted by their share of the prior volume), its relative error, posterior probability, and "
        "the worst R-hat / smallest ESS of its conditional NUTS draws"
    )
    return ds
