"""Reliable PSIS-LOO of any task's fit: per mixture component, moment matching, exact refits (the three tiers).

A fit's posterior is a mixture of conditional posteriors, one per component
``c`` (a family, or a stratum of one), weighted by ``P(c | y)`` (the
``probability`` of the ``component_evidence`` group, from the bridge-sampled evidences). The
leave-one-round-out predictive density of round ``i`` decomposes exactly over
the components::

    1 / p(y_i | y_-i) = sum_c P(c | y) / p(y_i | y_-i, c)

so each ``p(y_i | y_-i, c)`` is estimated by PSIS on component ``c``'s own
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
(each parameter's map to the real line), where the posterior density is the
likelihood times the prior times the Jacobian. Rounds (observation units) still
above the threshold after that are refitted exactly without them
(:func:`refit_unreliable`, :class:`UnitRefit`, :func:`reliable_loo`). Where moment matching moves draws to
points at which a component's density cannot be evaluated (:class:`UndefinedDensity`), or gives a non-finite
estimate for a unit, that component (or unit) keeps its PSIS estimates (``moment_match_error`` says why) and
the refits take over.

The pieces are task-independent: a task (or the model base class) hands
:func:`psis_components` each component's draws, log-likelihood and densities
(:class:`ComponentDraws`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import logsumexp

#: Pareto k above which a PSIS estimate is not trusted (Vehtari et al. 2024).
K_THRESHOLD = 0.7

_HANDLED = (
    # every one of these is acted on here: high k goes to moment matching, then to exact refits
    "Estimated shape parameter of Pareto",
    r"Observation \d+: Moment matching did not improve",
    "After Moment Matching",
    "Maximum number of moment matching iterations",
    "No Pareto k values exceed the threshold",
)


@contextmanager
def quiet_pareto():
    """Silence ArviZ's high-Pareto-k warnings, which the callers act on (moment matching, refits, reported k)."""
    with warnings.catch_warnings():
        for text in _HANDLED:
            warnings.filterwarnings("ignore", message=text, category=UserWarning)
        yield


@dataclass
class ComponentLOO:
    """Pointwise LOO of one component: ``elpd_i``, ``pareto_k`` and ``lppd_i`` in the subject's round order."""

    component: object
    log_probability: float
    elpd_i: np.ndarray
    pareto_k: np.ndarray
    lppd_i: np.ndarray
    n_moment_matched: int = 0
    #: why moment matching was given up (its PSIS estimates then stand; the exact refits take any unit still
    #: above the threshold), or None
    moment_match_error: str | None = None


class UndefinedDensity(ArithmeticError):
    """A component's density or log-likelihood could not be evaluated at points moment matching moved the draws
    to (:func:`psis_components`)."""


def _defined(fn, zz: np.ndarray) -> np.ndarray:
    """``fn(zz)``, or :class:`UndefinedDensity` where it fails arithmetically.

    Why: arviz-stats' split transformation can move draws far beyond the posterior, where a task's density is
    not defined: on the Wu 2018 grid (participant 13, the GP's UCB) to log tau near -1e13, where tau is 0 and
    the choice rule divides by it (the task refuses such points with a FloatingPointError). Such a failure gives
    up moment matching for the component, not the fit; any other error is raised."""
    try:
        return fn(zz)
    except ArithmeticError as exc:
        raise UndefinedDensity(f"{type(exc).__name__} at moved draws: {exc}") from exc


@dataclass
class ComponentDraws:
    """What PSIS of one component needs: its label and posterior probability, its draws on the unconstrained
    scale ``z`` (chain, draw, dim), their log-likelihood ``ll`` (chain, draw, units), the component's
    unconstrained log-density at points ``log_density(zz (n, dim)) -> (n,)`` and the log-likelihood of the
    units there ``loglik(zz) -> (n, units)`` (moment matching moves the draws)."""

    component: object
    probability: float
    z: np.ndarray
    ll: np.ndarray
    log_density: Callable
    loglik: Callable


def psis_components(
    pieces: list[ComponentDraws],
    *,
    relevance: float,
    moment_match: bool = True,
    k_threshold: float = K_THRESHOLD,
    var_name: str = "y",
) -> list[ComponentLOO]:
    """PSIS-LOO of every component (module docstring). With ``moment_match``, a component is moment-matched
    when one of its units has k above ``k_threshold`` and the component matters for that unit (leave-one-out
    probability at least ``relevance``)."""
    import arviz_stats

    out, per = [], []
    for piece in pieces:
        n_par = piece.z.shape[-1]

        def log_prob_upars(u, piece=piece, n_par=n_par):
            v = _defined(piece.log_density, u.values.reshape(-1, n_par))
            return xr.DataArray(v.reshape(u.shape[:2]), dims=("chain", "draw"))

        def log_lik_i_upars(u, i, piece=piece, n_par=n_par):
            v = _defined(piece.loglik, u.values.reshape(-1, n_par))[:, i]
            return xr.DataArray(v.reshape(u.shape[:2]), dims=("chain", "draw"))

        ll = piece.ll
        data = _component_data(piece.z, ll, var_name)
        with quiet_pareto(), np.errstate(divide="ignore", invalid="ignore"):  # k reports what these warn of
            lo = arviz_stats.loo(data, pointwise=True, var_name=var_name)
        p = float(piece.probability)
        flat = ll.reshape(-1, ll.shape[-1])
        lppd = logsumexp(flat, axis=0) - np.log(len(flat))
        lost = ~np.isfinite(lo.elpd_i.values)
        if lost.any():
            # PSIS loses a unit whose log-likelihood spreads over more than the floats' range (700 nats) across
            # the draws (a Laplace-drawn family of small probability, Wu 2018 2-D participant 13's GP UCB: -3,388
            # to -140): the plain importance-sampling estimate in log space stands in, untrusted (k infinite), so
            # that moment matching (which starts from ``lo``: flagged, not NaN) or an exact refit decides the unit
            # wherever the component matters for it
            lo.elpd_i.values[lost] = np.log(len(flat)) - logsumexp(-flat[:, lost], axis=0)
            lo.pareto_k.values[lost] = np.inf
        elpd_i, k_i = np.array(lo.elpd_i.values, float), np.array(lo.pareto_k.values, float)
        out.append(ComponentLOO(piece.component, np.log(p) if p > 0 else -np.inf, elpd_i, k_i, lppd))
        per.append((data, lo, log_prob_upars, log_lik_i_upars, piece.z))
    if moment_match:
        share = loo_probabilities(out)
        for k, (data, lo, lp, lli, z) in enumerate(per):
            bad = (out[k].pareto_k > k_threshold) & (share[k] >= relevance)
            if not bad.any():
                continue
            upars = xr.DataArray(z, dims=("chain", "draw", "upars"))
            # the k fit of degenerate weights divides by zero: k reports it (as in the plain PSIS above)
            try:
                with quiet_pareto(), np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
                    mm = arviz_stats.loo_moment_match(
                        data, lo, lp, lli, upars=upars, k_threshold=k_threshold, pointwise=True, var_name=var_name
                    )
            except (ValueError, UndefinedDensity) as exc:
                # arviz-stats re-raises a density's failure as a ValueError in some stages, lets it through in others
                cause = exc if isinstance(exc, UndefinedDensity) else exc.__cause__
                if not isinstance(cause, UndefinedDensity):
                    raise
                out[k].moment_match_error = str(cause)
                continue
            new_elpd, new_k = np.array(mm.elpd_i.values, float), np.array(mm.pareto_k.values, float)
            kept = ~np.isfinite(new_elpd)  # a unit moment matching could not estimate keeps its earlier estimate
            new_elpd[kept], new_k[kept] = out[k].elpd_i[kept], out[k].pareto_k[kept]
            out[k].n_moment_matched = int(((out[k].pareto_k > k_threshold) & (new_k < out[k].pareto_k)).sum())
            out[k].elpd_i, out[k].pareto_k = new_elpd, new_k
    return out


def _component_data(z, ll, var_name):
    import arviz as az

    return az.InferenceData(
        posterior=xr.Dataset({"upars": (("chain", "draw", "upar"), z)}),
        log_likelihood=xr.Dataset({var_name: (("chain", "draw", "unit"), ll)}),
    )


def loo_probabilities(parts: list[ComponentLOO]) -> np.ndarray:
    """``P(c | y_-i)`` of every component and round: shape (components, rounds)."""
    a = np.array([p.log_probability for p in parts])[:, None] - np.stack([p.elpd_i for p in parts])
    return np.exp(a - logsumexp(a, axis=0))


def combine(parts: list[ComponentLOO], relevance: float):
    """Pointwise ``(elpd_i, pareto_k, lppd_i)`` of the mixture from its components' estimates."""
    lp = np.array([p.log_probability for p in parts])[:, None]
    elpd_i = -logsumexp(lp - np.stack([p.elpd_i for p in parts]), axis=0)
    share = loo_probabilities(parts)
    k = np.where(share >= relevance, np.stack([p.pareto_k for p in parts]), -np.inf).max(axis=0)
    lppd_i = logsumexp(lp + np.stack([p.lppd_i for p in parts]), axis=0)
    return elpd_i, k, lppd_i


def elpd_data(
    parts: list[ComponentLOO], relevance: float, n_samples: int, unit: str, units, k_threshold: float = K_THRESHOLD
):
    """The mixture's PSIS-LOO from its components' estimates as an :class:`arviz.ELPDData` (works with
    :func:`arviz.compare` and :func:`arviz.reloo`); its ``pareto_k`` is the k of each unit's estimate,
    ``n_moment_matched`` (an extra entry) counts the (component, unit) estimates moment matching improved,
    ``n_moment_match_failed`` the components whose moment matching was given up (``moment_match_error``)."""
    from arviz import ELPDData

    elpd_i, k, lppd_i = combine(parts, relevance)
    coords = {unit: np.asarray(units)}
    fields = {
        "elpd_loo": float(elpd_i.sum()),
        "se": float(np.sqrt(len(elpd_i) * np.var(elpd_i))),
        "p_loo": float(lppd_i.sum() - elpd_i.sum()),
        "n_samples": int(n_samples),
        "n_data_points": len(elpd_i),
        "warning": bool((k > k_threshold).any()),
        "loo_i": xr.DataArray(elpd_i, dims=unit, coords=coords, name="loo_i"),
        "pareto_k": xr.DataArray(k, dims=unit, coords=coords, name="pareto_shape"),
        "scale": "log",
        "good_k": min(1 - 1 / np.log10(n_samples), 0.7),  # as arviz.loo reports it
        "n_moment_matched": int(sum(p.n_moment_matched for p in parts)),
        "n_moment_match_failed": int(sum(p.moment_match_error is not None for p in parts)),
    }
    return ELPDData(data=list(fields.values()), index=list(fields))


def refit_unreliable(loo, wrapper, *, k_threshold: float = K_THRESHOLD):
    """The third tier: every unit whose k is still above ``k_threshold`` is refitted exactly without it
    (:func:`arviz.reloo` with ``wrapper``, an :class:`arviz.SamplingWrapper`). Returns ``(loo, n_refit)``; a
    refitted unit's k is 0 (its elpd is exact)."""
    import arviz as az

    n_refit = int((loo.pareto_k.values > k_threshold).sum())
    if n_refit:
        loo = az.reloo(wrapper, loo_orig=loo, k_thresh=k_threshold, verbose=False)
        loo["warning"] = bool((loo.pareto_k.values > k_threshold).any())
    return loo, n_refit


def _sampling_wrapper():
    from arviz import SamplingWrapper

    class UnitRefit(SamplingWrapper):
        """Exact leave-one-unit-out for :func:`arviz.reloo`: the model is fitted again without unit ``i`` (same
        configuration), and unit ``i``'s log predictive density is ``log mean_s p(y_i | draw s)`` over the
        refit's draws. The model provides ``unit_coords()``, ``select_units(keep)``, ``predictive_loglik(idata,
        observations)``, ``fit_attrs()`` and ``fit(progress=False)``, as :class:`~ibo_pymc.engine.model.IBOModelBase`
        does (and the hotspot task's model)."""

        def __init__(self, model, log=None):
            super().__init__(model=None, idata_orig=model.idata)
            self.fit = model
            self.log = log

        def sel_observations(self, idx):
            if not isinstance(idx, np.ndarray):  # arviz probes the methods with dummy arguments first
                raise TypeError("expected an array of unit positions")
            unit, units = self.fit.unit_coords()
            keep = np.ones(len(units), bool)
            keep[np.asarray(idx).ravel()] = False
            self._left_out = f"{unit} {', '.join(str(units[i]) for i in np.flatnonzero(~keep))}"
            return self.fit.select_units(keep), self.fit.select_units(~keep)

        def sample(self, modified_observed_data):
            if modified_observed_data is None or isinstance(modified_observed_data, (int, float, str)):
                raise TypeError("expected observations")
            if self.log:
                a = self.fit.fit_attrs()
                self.log(f"{self.fit.task} subject {a['subject']} {a['model']}: refitting without {self._left_out}")
            m = type(self.fit)(modified_observed_data, config=self.fit.config)
            m.fit(progress=False)
            return m

        def get_inference_data(self, fitted_model):
            if not hasattr(fitted_model, "idata"):
                raise TypeError("expected a fitted model")
            return fitted_model.idata

        def log_likelihood__i(self, excluded_obs, idata__i):
            if excluded_obs is None or isinstance(excluded_obs, (int, float, str)):
                raise TypeError("expected observations")
            return xr.DataArray(self.fit.predictive_loglik(idata__i, excluded_obs)[:, 0], dims=["sample"])

    return UnitRefit


def UnitRefit(model, log=None):  # noqa: N802 - a class, made on first use (ArviZ is imported then)
    """The :class:`arviz.SamplingWrapper` that refits a model of the base class without one unit."""
    return _sampling_wrapper()(model, log=log)


def reliable_loo(model, *, k_threshold: float = K_THRESHOLD, moment_match: bool = True, log=None):
    """PSIS-LOO of a fitted model of the base class that every unit can trust: per-component PSIS, moment
    matching, then exact refits of the units still above ``k_threshold``. Returns ``(ELPDData, n_refit)``."""
    parts = psis_components(
        model.component_draws(),
        relevance=float(model.config.relevance),
        moment_match=moment_match,
        k_threshold=k_threshold,
        var_name=model.observed,
    )
    ll = model.idata.log_likelihood[model.observed]
    unit, units = model.unit_coords()
    loo = elpd_data(
        parts, float(model.config.relevance), ll.sizes["chain"] * ll.sizes["draw"], unit, units, k_threshold
    )
    return refit_unreliable(loo, UnitRefit(model, log=log), k_threshold=k_threshold)
