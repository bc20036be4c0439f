"""PSIS-LOO of a hotspot fit, per mixture component, with moment matching: the engine's estimators
(:mod:`ibo_pymc.engine.loo`, where the method is explained) on the hotspot model's components.

A component is a family or a stratum of one (:class:`~ibo_pymc.tasks.hotspot.model.builder.Component`); its
draws are mapped to the unconstrained scale by the logit of each parameter over its prior interval (the
strata's restricted intervals included), through the hotspot model's parameters. Rounds still above the
threshold after moment matching are refitted exactly by :func:`ibo_pymc.tasks.hotspot.compare.reliable_loo`.
"""

from __future__ import annotations

import numpy as np

from ibo_pymc.engine.loo import (
    K_THRESHOLD,
    ComponentDraws,
    ComponentLOO,
    combine,
    elpd_data,
    loo_probabilities,
    psis_components,
    quiet_pareto,
)
from ibo_pymc.engine.results import component_table
from ibo_pymc.tasks.hotspot.forward.variants import log_density_unconstrained
from ibo_pymc.tasks.hotspot.model.builder import components


def component_draws(fit) -> list[ComponentDraws]:
    """Each component's draws, log-likelihood (the subject's round order) and densities, of a fitted
    :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`."""
    idata = fit.idata
    comps = components(idata)
    probs = component_table(idata)["probability"].to_dict()
    cond = {n: np.asarray(idata.conditional_posterior[n].values, float) for n in idata.conditional_posterior.data_vars}
    out = []
    for k, c in enumerate(comps):
        d = fit.parameters.draws(comps, cond, k)

        def loglik(zz, c=c):
            return fit.sd.to_subject_order(
                fit.parameters.loglik(fit.sd, c.family, fit.parameters.from_unconstrained(c, zz))
            )

        def log_density(zz, loglik=loglik):
            return loglik(zz).sum(-1) + log_density_unconstrained(zz).sum(-1)

        ll = fit.sd.to_subject_order(fit.parameters.loglik(fit.sd, c.family, d))  # (chain, draw, round)
        out.append(
            ComponentDraws(c, float(probs[c.label]), fit.parameters.to_unconstrained(c, d), ll, log_density, loglik)
        )
    return out


def component_loo(fit, *, moment_match: bool = True, k_threshold: float = K_THRESHOLD) -> list[ComponentLOO]:
    """PSIS-LOO of every component of a fitted :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`
    (:func:`ibo_pymc.engine.loo.psis_components`)."""
    return psis_components(
        component_draws(fit),
        relevance=float(fit.config.relevance),
        moment_match=moment_match,
        k_threshold=k_threshold,
        var_name="theta2",
    )


def mixture_loo(fit, *, moment_match: bool = True, k_threshold: float = K_THRESHOLD):
    """PSIS-LOO of a fit from its components (module docstring), as an :class:`arviz.ELPDData`
    (:func:`ibo_pymc.engine.loo.elpd_data`)."""
    parts = component_loo(fit, moment_match=moment_match, k_threshold=k_threshold)
    ll = fit.idata.log_likelihood["theta2"]
    return elpd_data(
        parts,
        float(fit.config.relevance),
        int(ll.sizes["chain"] * ll.sizes["draw"]),
        "round",
        ll["round"].values,
        k_threshold,
    )


__all__ = [
    "K_THRESHOLD",
    "ComponentLOO",
    "combine",
    "component_draws",
    "component_loo",
    "loo_probabilities",
    "mixture_loo",
    "quiet_pareto",
]
