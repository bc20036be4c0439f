"""Priors as objects (SPEC section 7): every parameter of the model has a uniform prior.

A :class:`UniformPrior` knows its interval, draws from itself, gives its
log-density, declares itself as a PyMC variable, and holds the logit map to the
real line that the samplers and bridge sampling work on. The acquisition
families carry the prior of their shape parameter
(:attr:`~ibo_pymc.tasks.hotspot.forward.acquisition.AcquisitionFamily.prior`); :data:`PRIORS`
holds those of the parameters every family shares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class UniformPrior:
    """U(lo, hi), with the logit map to the real line."""

    lo: float
    hi: float

    def __post_init__(self):
        if not float(self.lo) < float(self.hi):
            raise ValueError(f"a uniform prior needs lo < hi, got ({self.lo}, {self.hi})")

    @property
    def bounds(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

    def draw(self, rng: np.random.Generator, size=None):
        """Draws from the prior."""
        return rng.uniform(self.lo, self.hi, size=size)

    def logpdf(self, v):
        """log density: -log(hi - lo) inside the interval, -inf outside."""
        v = np.asarray(v, float)
        return np.where((v >= self.lo) & (v <= self.hi), -np.log(self.hi - self.lo), -np.inf)

    def restrict(self, lo: float, hi: float) -> UniformPrior:
        """The prior restricted to ``[lo, hi]`` (a stratum of a multimodal fit), inside its own interval."""
        return UniformPrior(max(float(lo), self.lo), min(float(hi), self.hi))

    def pymc(self, name: str, **kwargs):
        """The prior as a variable of the PyMC model in context (``pm.Uniform``)."""
        import pymc as pm

        return pm.Uniform(name, lower=float(self.lo), upper=float(self.hi), **kwargs)

    def to_unconstrained(self, v, eps: float = 1e-9):
        """logit((v - lo) / (hi - lo)), with v kept inside the open interval."""
        u = np.clip((np.asarray(v, float) - self.lo) / (self.hi - self.lo), eps, 1 - eps)
        return np.log(u) - np.log1p(-u)

    def from_unconstrained(self, z):
        return self.lo + (self.hi - self.lo) / (1.0 + np.exp(-np.asarray(z, float)))


def log_density_unconstrained(z):
    """log(sigmoid(z) sigmoid(-z)): a uniform prior times the Jacobian of the logit map, up to log(hi - lo)
    (which cancels against the prior density 1 / (hi - lo))."""
    z = np.asarray(z, float)
    return -np.logaddexp(0.0, z) - np.logaddexp(0.0, -z)


#: priors of the parameters every family shares (SPEC section 7)
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
