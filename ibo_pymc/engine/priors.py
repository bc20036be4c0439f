"""Priors of a task's parameters, each with its map to the real line that the samplers and bridge sampling work on.

* :class:`UniformPrior` -- U(lo, hi) with the logit map (the hotspot task's parameters);
* :class:`LogNormalPrior` -- log-normal, with the log map (the grid task's parameters).

Each draws from itself, maps to and from its unconstrained scale (NumPy, and PyTensor for
:class:`~ibo_pymc.engine.density.PyTensorDensity`) and gives the density of the unconstrained variable (the
prior times the map's Jacobian), which is what a family's unconstrained log-density adds to the likelihood.
"""

from __future__ import annotations

import math
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

    def log_mass_unconstrained(self, a: float, b: float) -> float:
        """log of the prior's mass of ``[a, b]`` on the unconstrained (logit) scale (a stratum's share):
        ``sigmoid(b) - sigmoid(a)`` in logs, without the cancellation of either tail (``a`` = 37 keeps its -37)."""
        a, b = float(a), float(b)
        if not a < b:
            return -math.inf
        if a == -math.inf:
            return -float(np.logaddexp(0.0, -b))  # log sigmoid(b)
        if b == math.inf:
            return -float(np.logaddexp(0.0, a))  # log sigmoid(-a)
        # sigmoid(b) - sigmoid(a) = (e^b - e^a) / ((1 + e^a)(1 + e^b)) = e^b (1 - e^(a - b)) / (...)
        return b + math.log1p(-math.exp(a - b)) - float(np.logaddexp(0.0, a)) - float(np.logaddexp(0.0, b))

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

    def log_density_unconstrained(self, z):
        return log_density_unconstrained(z)

    def from_unconstrained_tensor(self, z):
        import pytensor.tensor as pt

        return self.lo + (self.hi - self.lo) * pt.sigmoid(z)

    def log_density_unconstrained_tensor(self, z):
        import pytensor.tensor as pt

        return -pt.softplus(z) - pt.softplus(-z)

    #: where a mode search starts on the unconstrained scale (the interval's middle), and its scale
    center = 0.0
    scale = 1.0


def log_density_unconstrained(z):
    """log(sigmoid(z) sigmoid(-z)): the density of z = logit((v - lo) / (hi - lo)) when v is uniform on (lo, hi)
    (the prior density 1 / (hi - lo) times the Jacobian (hi - lo) sigmoid(z) sigmoid(-z))."""
    z = np.asarray(z, float)
    return -np.logaddexp(0.0, z) - np.logaddexp(0.0, -z)


@dataclass(frozen=True)
class LogNormalPrior:
    """log v ~ Normal(mu, sigma), with the log map to the real line (so the unconstrained variable is normal)."""

    mu: float
    sigma: float

    def __post_init__(self):
        if not float(self.sigma) > 0:
            raise ValueError(f"a log-normal prior needs sigma > 0, got {self.sigma}")

    def draw(self, rng: np.random.Generator, size=None):
        """Draws from the prior (exp of mu + sigma times standard normal draws)."""
        return np.exp(self.mu + self.sigma * rng.standard_normal(size))

    def to_unconstrained(self, v):
        return np.log(np.asarray(v, float))

    def from_unconstrained(self, z):
        return np.exp(np.asarray(z, float))

    def log_density_unconstrained(self, z):
        u = (np.asarray(z, float) - self.mu) / self.sigma
        return -0.5 * u * u - math.log(self.sigma) - 0.5 * math.log(2 * math.pi)

    def log_mass_unconstrained(self, a: float, b: float) -> float:
        """log of the prior's mass of ``[a, b]`` on the unconstrained (log) scale (a stratum's share), computed
        on the side of the mean where the normal's tail is small, so that a far tail keeps its digits."""
        from scipy.special import log_ndtr

        lo, hi = (float(a) - self.mu) / self.sigma, (float(b) - self.mu) / self.sigma
        if lo > 0:  # both in the upper tail: the mass is Phi(-lo) - Phi(-hi)
            lo, hi = -hi, -lo
        top, bottom = float(log_ndtr(hi)), float(log_ndtr(lo))
        return top + math.log1p(-math.exp(bottom - top)) if bottom < top else -math.inf

    def from_unconstrained_tensor(self, z):
        import pytensor.tensor as pt

        return pt.exp(z)

    def log_density_unconstrained_tensor(self, z):
        u = (z - self.mu) / self.sigma
        return -0.5 * u * u - math.log(self.sigma) - 0.5 * math.log(2 * math.pi)

    @property
    def center(self) -> float:
        """Where a mode search starts on the unconstrained scale, and its scale (the prior's mean and sd there)."""
        return float(self.mu)

    @property
    def scale(self) -> float:
        return float(self.sigma)
