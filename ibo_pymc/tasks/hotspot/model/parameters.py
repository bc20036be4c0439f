"""A component's free parameters: names, prior intervals, the logit map, its conditional draws.

A component (a family, or a stratum of one; :class:`~ibo_pymc.tasks.hotspot.model.builder.Component`)
has the family's shape parameter (keyed ``param``), gamma, w and the variant's
free taus. Conditional draws are kept with ``tau_neg`` and ``tau_pos`` always
present (zero for u, equal for ũ, whose one tau is keyed ``tau_pos``), so that
every consumer evaluates the likelihood the same way. Bridge sampling, the
convergence checks, the strata, the InferenceData assembly and LOO's moment
matching all read a component's parameters through :class:`ComponentParameters`.
"""

from __future__ import annotations

import numpy as np

from ibo_pymc.tasks.hotspot.forward.priors import UniformPrior
from ibo_pymc.tasks.hotspot.forward.variants import Variant
from ibo_pymc.tasks.hotspot.model import pointwise
from ibo_pymc.tasks.hotspot.model.builder import Component, SubjectData


def internal_name(name: str) -> str:
    """The key of a free tau among a component's columns: ũ's single tau is kept as ``tau_pos``."""
    return "tau_pos" if name == "tau" else name


class ComponentParameters:
    """The free parameters of the components of one variant (module docstring)."""

    def __init__(self, variant: Variant):
        self.variant = variant

    def model_name(self, key: str) -> str:
        """The model's name of a column (ũ's single tau is stored as ``tau_pos``)."""
        return "tau" if key == "tau_pos" and self.variant.taus == ("tau",) else key

    def columns(self, c: Component) -> list[tuple[str, float, float]]:
        """A component's free parameters (key, prior interval), in the unconstrained vector's order."""
        taus = tuple(internal_name(n) for n in self.variant.taus)
        return [(key, *c.bounds(self.model_name(key))) for key in ("param", "gamma", "w", *taus)]

    def with_taus(self, d: dict) -> dict:
        """Fill in tau_neg and tau_pos where the variant ties them (ũ) or fixes them at 0 (u)."""
        if not self.variant.augmented:
            d["tau_neg"] = d["tau_pos"] = np.zeros_like(d["gamma"])
        elif not self.variant.split_by_sign:
            d["tau_neg"] = d["tau_pos"]
        return d

    def draws(self, comps, cond: dict, k: int) -> dict:
        """Constrained draws (chain, draw) of component ``k``'s conditional posterior from the stacked draws
        ``cond``."""
        out = {"param": cond[comps[k].var_name], "gamma": cond["gamma"][..., k], "w": cond["w"][..., k]}
        for name in self.variant.taus:
            out[internal_name(name)] = cond[name][..., k]
        return self.with_taus(out)

    def to_unconstrained(self, c: Component, d: dict) -> np.ndarray:
        """Draws as unconstrained vectors (..., n_parameters): each column's logit over its prior interval."""
        return np.stack([UniformPrior(lo, hi).to_unconstrained(d[key]) for key, lo, hi in self.columns(c)], axis=-1)

    def from_unconstrained(self, c: Component, z: np.ndarray) -> dict:
        """Unconstrained vectors (n, n_parameters) back to constrained draws (taus filled in)."""
        d = {key: UniformPrior(lo, hi).from_unconstrained(z[:, j]) for j, (key, lo, hi) in enumerate(self.columns(c))}
        return self.with_taus(d)

    def loglik(self, sd: SubjectData, family: str, d: dict, *, summed: bool = False) -> np.ndarray:
        """Pointwise log-likelihood (..., round; rounds in the model's internal order) at constrained draws ``d``;
        with ``summed`` its sum over the rounds (...)."""
        return pointwise.loglik(sd, family, d["param"], d["tau_neg"], d["tau_pos"], d["gamma"], d["w"], summed=summed)
