"""PSIS-LOO of a hotspot fit, computed per mixture component, with moment matching (:mod:`ibo_pymc.engine.loo`).

A fit's posterior is a mixture of conditional posteriors, one per component
``c`` (a family, or a stratum of one), weighted by ``P(c | y)`` (the
``probability`` of the ``component_evidence`` group, from the bridge-sampled evidences). The
leave-one-round-out predictive density of round ``i`` decomposes exactly over
the components::

    1 / p(y_i | y_-i) = sum_c P(c | y) / p(y_i | y_-i, c)

so each ``p(y_i | y_-i, c)`` is estimated by PSIS on component ``c``'s own NUTS
draws (the ``conditional_posterior`` group), where the importance ratios are
far better behaved than on the pooled draws (a round that contradicts one
family no longer throws huge weights onto that family's few draws). The
weight of component ``c`` in round ``i``'s estimate is its leave-one-out
probability ``P(c | y_-i)``; the Pareto k reported for round ``i`` is the
largest k among the components with ``P(c | y_-i)`` at least the fit's
``relevance`` (0.001 by default; a less probable component moves
``elpd_i`` by less than 0.001 even if its own estimate were off by 100%).

Components whose PSIS k exceeds the threshold (0.7) in a round where they
matter are moment-matched (Paananen et al. 2021, Statistics and Computing 31:16;
:func:`arviz_stats.loo_moment_match`) in the component's unconstrained space
(logit of each parameter over its prior interval), where the posterior density
is the likelihood times the uniform prior times the Jacobian. Rounds still
above the threshold after that are refitted exactly by
:func:`ibo_pymc.tasks.hotspot.compare.reliable_loo`.

The estimators are the engine's (:mod:`ibo_pymc.engine.loo`); this module hands them each component's draws
(strata included) through the hotspot model's parameters.
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
            return fit.sd.to_subject_order(fit.parameters.loglik(fit.sd, c.family, fit.parameters.from_unconstrained(c, zz)))

        def log_density(zz, loglik=loglik):
            return loglik(zz).sum(-1) + log_density_unconstrained(zz).sum(-1)

        ll = fit.sd.to_subject_order(fit.parameters.loglik(fit.sd, c.family, d))  # (chain, draw, round)
        out.append(ComponentDraws(c, float(probs[c.label]), fit.parameters.to_unconstrained(c, d), ll, log_density,
                                  loglik))
    return out


def component_loo(fit, *, moment_match: bool = True, k_threshold: float = K_THRESHOLD) -> list[ComponentLOO]:
    """PSIS-LOO of every component of a fitted :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`
    (:func:`ibo_pymc.engine.loo.psis_components`)."""
    return psis_components(component_draws(fit), relevance=float(fit.config.relevance), moment_match=moment_match,
                           k_threshold=k_threshold, var_name="theta2")


def mixture_loo(fit, *, moment_match: bool = True, k_threshold: float = K_THRESHOLD):
    """PSIS-LOO of a fit from its components (module docstring), as an :class:`arviz.ELPDData`
    (:func:`ibo_pymc.engine.loo.elpd_data`)."""
    parts = component_loo(fit, moment_match=moment_match, k_threshold=k_threshold)
    ll = fit.idata.log_likelihood["theta2"]
    return elpd_data(parts, float(fit.config.relevance), int(ll.sizes["chain"] * ll.sizes["draw"]), "round",
                     ll["round"].values, k_threshold)


__all__ = ["K_THRESHOLD", "ComponentLOO", "combine", "component_draws", "component_loo", "loo_probabilities",
           "mixture_loo", "quiet_pareto"]
