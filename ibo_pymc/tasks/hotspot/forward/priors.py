"""The hotspot model's priors (docs: explanation/model): every parameter has a uniform prior.

A :class:`~ibo_pymc.engine.priors.UniformPrior` knows its interval, draws from itself, gives its
log-density, declares itself as a PyMC variable, and holds the logit map to the
real line that the samplers and bridge sampling work on. The acquisition
families carry the prior of their shape parameter
(:attr:`~ibo_pymc.tasks.hotspot.forward.acquisition.AcquisitionFamily.prior`); :data:`PRIORS`
holds those of the parameters every family shares.
"""

from __future__ import annotations

import numpy as np

from ibo_pymc.engine.priors import UniformPrior, log_density_unconstrained

#: priors of the parameters every family shares (docs: explanation/model)
PRIORS = {
    "gamma": UniformPrior(0.01, float(np.pi / 4)),
    "w": UniformPrior(0.0, 1.0),
    "tau": UniformPrior(0.0, float(np.pi / 2)),
    "tau_neg": UniformPrior(0.0, float(np.pi / 2)),
    "tau_pos": UniformPrior(0.0, float(np.pi / 2)),
}


def prior_bounds(name: str) -> tuple[float, float]:
    """Uniform prior interval of a shared parameter (gamma, w, tau, tau_neg, tau_pos)."""
    return PRIORS[name].bounds


__all__ = ["PRIORS", "UniformPrior", "log_density_unconstrained", "prior_bounds"]
