"""Build the PyMC model of one subject (docs: explanation/model).

Two layouts share every piece (priors, lookup, likelihood):

``build_model(obs, model)``
    the model of the paper, with the acquisition family ``k`` marginalised:
    ``log p(theta2 | params) = logsumexp_k(log pi_k + sum_i log p(theta2_i | k, params))``
    over PI, EI, UCB with prior 1/3 each, and one gamma, w and tau (or tau^-,
    tau^+) shared by the families, added as a ``pm.Potential`` through the
    fused likelihood Op (fast, with an analytic gradient). It has no observed
    variable; the same model written generatively (``family ~ Categorical``,
    ``theta2`` an observed ``CustomDist``, the family marginalised by
    pymc-extras), which draws prior and posterior predictives, is
    :func:`ibo_pymc.tasks.hotspot.model.generative.generative_model`; the two have the same
    log-density and gradient (tested).

``build_model(obs, model, layout="stacked")``
    the family-conditional posteriors side by side: gamma, w and tau get a
    ``family`` dim and the log-density is the sum over families of each
    family's log-likelihood. Sampling it gives draws of ``p(params | theta2, k)``
    for every k at once, which :mod:`ibo_pymc.tasks.hotspot.model.fit` combines with the
    families' marginal likelihoods into the marginalised posterior. This is the
    layout that converges (see :mod:`ibo_pymc.tasks.hotspot.model.fit`).

Priors (docs: explanation/model): xi_PI, xi_EI ~ U(0, 30); p_UCB ~ U(0.5, 0.99);
tau, tau^-, tau^+ ~ U(0, pi/2); gamma ~ U(0.01, pi/4); w ~ U(0, 1). The
shape-parameter bounds come from the family registry and equal the table grids.

Round order: for ``tau_pm`` the likelihood Op wants the rounds with
delta_r1 < 0 first; :class:`SubjectData` keeps that order internally
(``order``) and every output is put back into the subject's round order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
from ibo_pymc.tasks.hotspot.forward.argmax import ArgmaxTables, load_tables
from ibo_pymc.tasks.hotspot.forward.priors import PRIORS, UniformPrior
from ibo_pymc.tasks.hotspot.forward.variants import (
    MODELS,
    ModelSpec,
    get_variant,
    prior_bounds,
    tau_names,
)
from ibo_pymc.tasks.hotspot.model.lookup import RoundTables
from ibo_pymc.tasks.hotspot.model.round_loglik import half_angles

__all__ = ["LAYOUTS", "MODELS", "Component", "SubjectData", "build_model", "prior_bounds", "tau_names"]

LAYOUTS = ("marginal", "stacked")


@dataclass(frozen=True)
class Component:
    """One block of the stacked layout: a family, with its prior optionally restricted.

    A family whose conditional posterior is multimodal is split into strata at
    the density minimum between its modes, along the parameter that separates
    them (see :mod:`ibo_pymc.tasks.hotspot.model.fit`). Each stratum is sampled as its own
    component, with the uniform prior restricted by ``limits`` (a tuple of
    ``(name, lo, hi)``; ``name`` is ``param`` for the shape parameter, or
    gamma, w, tau, tau_neg, tau_pos). ``stratum`` numbers the strata of one
    family (0 when it is not split).
    """

    family: str
    limits: tuple = ()
    stratum: int = 0
    n_strata: int = 1

    def prior(self, name: str) -> UniformPrior:
        """The unrestricted prior of a parameter of this component (``param``: the family's shape parameter)."""
        return get_family(self.family).prior if name == "param" else PRIORS[name]

    def bounds(self, name: str) -> tuple[float, float]:
        """The (possibly restricted) prior interval of a parameter of this component."""
        for n, lo, hi in self.limits:
            if n == name:
                return float(lo), float(hi)
        return self.prior(name).bounds

    @property
    def var_name(self) -> str:
        name = get_family(self.family).var_name
        return name if self.n_strata == 1 else f"{name}_s{self.stratum}"

    @property
    def label(self) -> str:
        if self.n_strata == 1:
            return self.family
        names = {"param": get_family(self.family).var_name}
        return f"{self.family}[" + ", ".join(f"{names.get(n, n)} {lo:.3g}-{hi:.3g}" for n, lo, hi in self.limits) + "]"

    @property
    def log_width_fraction(self) -> float:
        """log of the stratum's share of the family's prior volume."""
        out = 0.0
        for n, lo, hi in self.limits:
            plo, phi = self.prior(n).bounds
            out += np.log((hi - lo) / (phi - plo))
        return float(out)

    def split(self, name: str, at: float) -> tuple[Component, Component]:
        """The two halves of this component on either side of ``name = at``."""
        lo, hi = self.bounds(name)
        if not lo < at < hi:
            raise ValueError(f"split point {name} = {at} is outside ({lo}, {hi})")
        rest = tuple(lim for lim in self.limits if lim[0] != name)
        return (
            Component(self.family, (*rest, (name, lo, float(at)))),
            Component(self.family, (*rest, (name, float(at), hi))),
        )

    def to_dict(self) -> dict:
        return {
            "family": self.family,
            "limits": [list(v) for v in self.limits],
            "stratum": self.stratum,
            "n_strata": self.n_strata,
        }


def whole_families(families) -> tuple[Component, ...]:
    """One component per family, over its whole prior."""
    return tuple(Component(f) for f in families)


def split_component(components, index: int, name: str, at: float) -> tuple[Component, ...]:
    """Split component ``index`` at ``name = at`` (strata renumbered per family)."""
    pieces = [*components[:index], *components[index].split(name, at), *components[index + 1 :]]
    out = []
    for p in pieces:
        same = [q for q in pieces if q.family == p.family]
        out.append(Component(p.family, p.limits, same.index(p), len(same)))
    return tuple(out)


@dataclass(frozen=True)
class SubjectData:
    """A subject's rounds prepared for the likelihood (tables at its delta_r1, half-sorted)."""

    obs: SubjectObservations
    model: str
    rt: RoundTables  # values over rounds in ``order``
    order: np.ndarray  # internal position -> subject round position
    n_neg: int

    @classmethod
    def prepare(cls, obs: SubjectObservations, model: str, tables: ArgmaxTables | None = None, families=None):
        variant = get_variant(model)
        tables = tables or load_tables()
        d = np.asarray(obs.delta_r1, float)
        if variant.split_by_sign:
            order = np.argsort(d >= 0, kind="stable")
            n_neg = int((d < 0).sum())
        else:
            order = np.arange(len(d))
            n_neg = 0
        # the unaugmented model: tau = 0, the first tau node
        rt = RoundTables.from_tables(tables, d[order], families, tau_zero_only=not variant.augmented)
        return cls(obs=obs, model=model, rt=rt, order=order, n_neg=n_neg)

    @property
    def families(self) -> tuple[str, ...]:
        return self.rt.families

    @property
    def spec(self) -> ModelSpec:
        """The model specification: variant, families, priors."""
        return ModelSpec(self.model, self.families)

    @property
    def theta2(self) -> np.ndarray:
        """theta2 in internal order."""
        return np.asarray(self.obs.theta2, float)[self.order]

    @property
    def neg(self) -> np.ndarray:
        """Internal-order mask of rounds that use tau^- (all False unless ũ±)."""
        m = np.zeros(self.obs.n_rounds, bool)
        m[: self.n_neg] = True
        return m

    def to_subject_order(self, a) -> np.ndarray:
        """An array over rounds (last axis) in internal order, put back into the subject's round order (a new
        C-ordered array).

        A gather by the inverse permutation (``np.take``), not a scatter by ``order``: the same values, in a
        fifth to a third of the time on a fit's (chain, draw, round) log-likelihood."""
        a = np.asarray(a)
        if a.ndim == 0 or a.shape[-1] != len(self.order):
            raise ValueError(
                f"expected an array over this subject's {len(self.order)} rounds (last axis), got shape {a.shape}"
            )
        return np.take(a, np.argsort(self.order), axis=-1)

    @property
    def grid(self) -> np.ndarray:
        return np.stack([self.rt.param_lo, self.rt.param_step], axis=1)

    def op_inputs(self, families=None):
        """Constant inputs of :class:`~ibo_pymc.tasks.hotspot.model.op.FamilyLogLik` (optionally some families)."""
        idx = slice(None) if families is None else [self.rt.index(f) for f in families]
        return (
            np.ascontiguousarray(self.rt.values[idx]),
            half_angles(self.theta2),
            self.n_neg,
            np.ascontiguousarray(self.grid[idx]),
            self.rt.tau_step,
        )


def _coords(sd: SubjectData, families) -> dict:
    return {"family": list(families), "round": np.asarray(sd.obs.session_id)}


def build_model(
    obs: SubjectObservations | SubjectData,
    model: str = "tau_pm",
    *,
    layout: str = "marginal",
    families=None,
    components=None,
    tables: ArgmaxTables | None = None,
):
    """The PyMC model of one subject (see the module docstring).

    ``components`` (stacked layout only): the blocks to sample side by side,
    default one :class:`Component` per family; the dim is then ``component``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    from ibo_pymc.tasks.hotspot.model.op import family_loglik

    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
    sd = obs if isinstance(obs, SubjectData) else SubjectData.prepare(obs, model, tables)
    model = sd.model
    families = tuple(families or sd.families)
    if components is not None and layout != "stacked":
        raise ValueError("components are sampled side by side: use layout='stacked'")
    components = tuple(components or whole_families(families))
    F = len(components)
    T, xh, n_neg, grid, tau_step = sd.op_inputs([c.family for c in components])
    fam_dims = "component" if layout == "stacked" else None
    coords = _coords(sd, families)
    coords["component"] = [c.label for c in components]

    with pm.Model(coords=coords) as m:
        # data as shared variables: the compiled model is the same for every
        # subject, so a compiled sampler can be reused with new data
        T = pm.Data("argmax_table", T)
        xh = pm.Data("theta2_half_angles", xh)
        n_neg = pm.Data("n_neg", np.int64(n_neg))
        grid = pm.Data("param_grid", grid)
        tau_step = pm.Data("tau_step", np.float64(tau_step))
        params = [UniformPrior(*c.bounds("param")).pymc(c.var_name) for c in components]

        def shared(name):
            if layout != "stacked":
                return PRIORS[name].pymc(name)
            lo, hi = (np.array(v) for v in zip(*(c.bounds(name) for c in components)))
            return pm.Uniform(name, lo, hi, dims=fam_dims)

        gamma = shared("gamma")
        w = shared("w")
        variant = get_variant(model)
        taus = {n: shared(n) for n in variant.taus}
        tau_neg, tau_pos = variant.tau_pair(taus) if variant.augmented else (pt.zeros(F), pt.zeros(F))
        ones = pt.ones(F)
        ll, _ = family_loglik(
            T, xh, n_neg, grid, tau_step, pt.stack(params), tau_neg * ones, tau_pos * ones, gamma * ones, w * ones
        )
        if layout == "stacked":
            pm.Potential("loglik", ll, dims="component")
        else:
            log_prior = np.full(F, -np.log(F))
            pm.Potential("loglik", pm.math.logsumexp(ll + log_prior))
    return m


def components(idata) -> list:
    """The mixture components of a fit (:class:`~ibo_pymc.tasks.hotspot.model.builder.Component`), from its
    ``components`` attribute (the strata definitions)."""
    return [
        Component(d["family"], tuple(tuple(v) for v in d["limits"]), int(d["stratum"]), int(d["n_strata"]))
        for d in json.loads(idata.posterior.attrs["components"])
    ]
