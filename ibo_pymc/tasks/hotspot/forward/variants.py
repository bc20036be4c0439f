"""The model variants u, ũ and ũ± and the priors of the shared parameters: one definition for every layer.

A variant says how the acquisition function is augmented (docs: explanation/paper-grid):

==========  =====  =====================  ===========================================
name        label  free tau parameters    tau of a round with delta_r1 < 0 / >= 0
==========  =====  =====================  ===========================================
``u``       u      none                   0 / 0
``tau``     ũ      ``tau``                tau / tau
``tau_pm``  ũ±     ``tau_neg, tau_pos``   tau^- / tau^+
==========  =====  =====================  ===========================================

The grid engine, the PyMC builders, the fit, comparison, regions and the
simulators all read :func:`get_variant` instead of comparing model names.

:class:`ModelSpec` is the whole model specification a fit, a simulator or a
generative model reads: the variant, its acquisition families, and the prior
object (:mod:`ibo_pymc.tasks.hotspot.forward.priors`) of every free parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ibo_pymc.tasks.hotspot.forward.acquisition import (
    PAPER_FAMILIES,
    AcquisitionFamily,
    get_family,
)
from ibo_pymc.tasks.hotspot.forward.priors import (
    PRIORS,
    UniformPrior,
    log_density_unconstrained,
    prior_bounds,
)


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


VARIANTS = {
    v.name: v
    for v in (Variant("u", "u", ()), Variant("tau", "ũ", ("tau",)), Variant("tau_pm", "ũ±", ("tau_neg", "tau_pos")))
}
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


@dataclass(frozen=True)
class ModelSpec:
    """One model: its variant, its acquisition families, and every free parameter's prior.

    >>> spec = ModelSpec("tau_pm")
    >>> spec.parameters
    ('xi_pi', 'xi_ei', 'p_ucb', 'gamma', 'w', 'tau_neg', 'tau_pos')
    >>> spec.prior("p_ucb").bounds
    (0.5, 0.99)
    """

    model: str = "tau_pm"
    families: tuple[str, ...] = PAPER_FAMILIES

    def __post_init__(self):
        get_variant(self.model)
        object.__setattr__(self, "families", tuple(get_family(f).name for f in self.families))

    @property
    def variant(self) -> Variant:
        return get_variant(self.model)

    def family(self, name: str) -> AcquisitionFamily:
        return get_family(name)

    @property
    def shape_parameters(self) -> tuple[str, ...]:
        """One shape parameter per family (``xi_pi``, ``xi_ei``, ``p_ucb``)."""
        return tuple(get_family(f).var_name for f in self.families)

    @property
    def shared(self) -> tuple[str, ...]:
        """The parameters every family shares: gamma, w and the variant's free taus."""
        return ("gamma", "w", *self.variant.taus)

    @property
    def parameters(self) -> tuple[str, ...]:
        return self.shape_parameters + self.shared

    def prior(self, name: str) -> UniformPrior:
        """The prior of a parameter, by its posterior variable name (``xi_pi``, ``gamma``, ...)."""
        for f in self.families:
            if get_family(f).var_name == name:
                return get_family(f).prior
        if name in self.shared:
            return PRIORS[name]
        raise KeyError(f"model {self.model!r} has no parameter {name!r}; its parameters: {', '.join(self.parameters)}")

    def priors(self) -> dict[str, UniformPrior]:
        return {n: self.prior(n) for n in self.parameters}


__all__ = [
    "MODELS",
    "PRIORS",
    "VARIANTS",
    "ModelSpec",
    "UniformPrior",
    "Variant",
    "get_variant",
    "log_density_unconstrained",
    "prior_bounds",
    "tau_names",
]
