"""The model variants u, ũ and ũ± and the priors of the shared parameters: one definition for every layer.

A variant says how the acquisition function is augmented (SPEC section 4):

========  =====  =====================  ===========================================
name      label  free tau parameters    tau of a round with delta_r1 < 0 / >= 0
========  =====  =====================  ===========================================
``u``     u      none                   0 / 0
``tau``   ũ      ``tau``                tau / tau
``tau_pm`` ũ±    ``tau_neg, tau_pos``   tau^- / tau^+
========  =====  =====================  ===========================================

The grid engine, the PyMC builders, the fit, comparison, regions and the
simulators all read :func:`get_variant` instead of comparing model names.

Priors (SPEC section 7) are uniform; :class:`UniformPrior` also holds the
logit map to the unconstrained line that the samplers and bridge sampling use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class UniformPrior:
    """U(lo, hi), with the logit map to the real line."""

    lo: float
    hi: float

    @property
    def bounds(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

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


@dataclass(frozen=True)
class Variant:
    """One augmentation variant (module docstring)."""

    name: str
    label: str
    taus: tuple[str, ...]

    @property
    def split_by_sign(self) -> bool:
        """Whether rounds with delta_r1 < 0 have their own tau (ũ±)."""
        return len(self.taus) == 2

    @property
    def augmented(self) -> bool:
        return bool(self.taus)

    def tau_pair(self, values: Mapping, like=None):
        """``(tau_neg, tau_pos)`` from a mapping holding this variant's free taus.

        For ``u`` both are zeros shaped like ``like`` (default: like ``values["gamma"]``).
        """
        if not self.taus:
            z = np.zeros_like(np.asarray(values["gamma"] if like is None else like, float))
            return z, z
        if len(self.taus) == 1:
            return values[self.taus[0]], values[self.taus[0]]
        return values["tau_neg"], values["tau_pos"]


VARIANTS = {v.name: v for v in (Variant("u", "u", ()), Variant("tau", "ũ", ("tau",)), Variant("tau_pm", "ũ±", ("tau_neg", "tau_pos")))}
#: the model names, in the paper's order
MODELS = tuple(VARIANTS)


def get_variant(name: str) -> Variant:
    """The variant of a model name; an unknown name is an :class:`~ibo_pymc.errors.InputError` naming the choices."""
    try:
        return VARIANTS[name]
    except (KeyError, TypeError):
        from ibo_pymc.errors import InputError

        raise InputError(f"unknown model {name!r}; expected one of {', '.join(MODELS)}", field="model") from None


def tau_names(model: str) -> tuple[str, ...]:
    """The free tau parameters of a model."""
    return get_variant(model).taus
