"""Each component's evidence of a hotspot fit, by bridge sampling (:mod:`ibo_pymc.engine.bridge`)."""

from __future__ import annotations

import numpy as np

from ibo_pymc.engine.bridge import BridgeResult, bridge_from_draws


def component_evidences(sd, parameters, comps, cond: dict, rng: np.random.Generator) -> list[BridgeResult]:
    """Bridge-sampling evidence of each component of a fit under its own (restricted) uniform prior.

    ``sd`` is the subject's :class:`~ibo_pymc.tasks.hotspot.model.builder.SubjectData`,
    ``parameters`` a :class:`~ibo_pymc.tasks.hotspot.model.parameters.ComponentParameters`,
    ``cond`` the stacked conditional draws. The log-density is the
    log-likelihood plus the uniform prior with the logit map's Jacobian, in the
    unconstrained space; the bridge draws' effective sample size is the smallest
    bulk ESS of the second halves of the chains.
    """
    from ibo_pymc.tasks.hotspot.forward.priors import log_density_unconstrained

    out = []
    for k, c in enumerate(comps):
        z = parameters.to_unconstrained(c, parameters.draws(comps, cond, k))

        def log_density(zz, c=c):
            d = parameters.from_unconstrained(c, zz)
            return parameters.loglik(sd, c.family, d, summed=True) + log_density_unconstrained(zz).sum(-1)

        out.append(bridge_from_draws(z, log_density, rng))
    return out
