"""PSIS-LOO of a sampled fit, computed per mixture component, with moment matching.

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
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from ibo_pymc.engine.results import component_table
from ibo_pymc.tasks.hotspot.forward.variants import log_density_unconstrained
from ibo_pymc.tasks.hotspot.model.builder import Component, components

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

    component: Component
    log_probability: float
    elpd_i: np.ndarray
    pareto_k: np.ndarray
    lppd_i: np.ndarray
    n_moment_matched: int = 0


def component_loo(fit, *, moment_match: bool = True, k_threshold: float = K_THRESHOLD) -> list[ComponentLOO]:
    """PSIS-LOO of every component of a fitted :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`.

    With ``moment_match``, a component is moment-matched when one of its rounds
    has k above ``k_threshold`` and the component matters for that round
    (leave-one-out probability at least the fit's ``relevance``).
    """
    import arviz_stats

    idata = fit.idata
    comps = components(idata)
    probs = component_table(idata)["probability"].to_dict()
    cond = {n: np.asarray(idata.conditional_posterior[n].values, float) for n in idata.conditional_posterior.data_vars}
    out, per = [], []
    for k, c in enumerate(comps):
        d = fit.parameters.draws(comps, cond, k)
        z = fit.parameters.to_unconstrained(c, d)
        n_par = z.shape[-1]

        def loglik(dd, c=c):
            return fit.sd.to_subject_order(fit.parameters.loglik(fit.sd, c.family, dd))

        def log_prob_upars(u, c=c, n_par=n_par, loglik=loglik):
            zz = u.values.reshape(-1, n_par)
            v = loglik(fit.parameters.from_unconstrained(c, zz)).sum(-1) + log_density_unconstrained(zz).sum(-1)
            return xr.DataArray(v.reshape(u.shape[:2]), dims=("chain", "draw"))

        def log_lik_i_upars(u, i, c=c, n_par=n_par, loglik=loglik):
            zz = u.values.reshape(-1, n_par)
            v = loglik(fit.parameters.from_unconstrained(c, zz))[:, i]
            return xr.DataArray(v.reshape(u.shape[:2]), dims=("chain", "draw"))

        ll = loglik(d)  # (chain, draw, round)
        data = _component_data(z, ll)
        with quiet_pareto():
            lo = arviz_stats.loo(data, pointwise=True, var_name="theta2")
        p = float(probs[c.label])
        lppd = logsumexp(ll.reshape(-1, ll.shape[-1]), axis=0) - np.log(ll.shape[0] * ll.shape[1])
        out.append(
            ComponentLOO(c, np.log(p) if p > 0 else -np.inf, np.asarray(lo.elpd_i.values, float),
                         np.asarray(lo.pareto_k.values, float), lppd)
        )
        per.append((data, lo, log_prob_upars, log_lik_i_upars, z))
    if moment_match:
        relevance = float(fit.config.relevance)
        share = loo_probabilities(out)
        for k, (data, lo, lp, lli, z) in enumerate(per):
            bad = (out[k].pareto_k > k_threshold) & (share[k] >= relevance)
            if not bad.any():
                continue
            upars = xr.DataArray(z, dims=("chain", "draw", "upars"))
            with quiet_pareto(), np.errstate(over="ignore", under="ignore"):
                mm = arviz_stats.loo_moment_match(data, lo, lp, lli, upars=upars, k_threshold=k_threshold,
                                                  pointwise=True, var_name="theta2")
            new_k = np.asarray(mm.pareto_k.values, float)
            out[k].n_moment_matched = int(((out[k].pareto_k > k_threshold) & (new_k < out[k].pareto_k)).sum())
            out[k].elpd_i = np.asarray(mm.elpd_i.values, float)
            out[k].pareto_k = new_k
    return out


def _component_data(z, ll):
    import arviz as az

    return az.InferenceData(
        posterior=xr.Dataset({"upars": (("chain", "draw", "upar"), z)}),
        log_likelihood=xr.Dataset({"theta2": (("chain", "draw", "round"), ll)}),
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


def mixture_loo(fit, *, moment_match: bool = True, k_threshold: float = K_THRESHOLD):
    """PSIS-LOO of a fit from its components (module docstring), as an :class:`arviz.ELPDData`.

    The result works with :func:`arviz.compare` and :func:`arviz.reloo`; its
    ``pareto_k`` is the k of each round's estimate, ``n_moment_matched`` (an
    extra entry) counts the (component, round) estimates moment matching improved.
    """
    from arviz import ELPDData

    parts = component_loo(fit, moment_match=moment_match, k_threshold=k_threshold)
    elpd_i, k, lppd_i = combine(parts, float(fit.config.relevance))
    ll = fit.idata.log_likelihood["theta2"]
    n_samples = int(ll.sizes["chain"] * ll.sizes["draw"])
    rounds = {"round": ll["round"].values}
    fields = {
        "elpd_loo": float(elpd_i.sum()),
        "se": float(np.sqrt(len(elpd_i) * np.var(elpd_i))),
        "p_loo": float(lppd_i.sum() - elpd_i.sum()),
        "n_samples": n_samples,
        "n_data_points": len(elpd_i),
        "warning": bool((k > k_threshold).any()),
        "loo_i": xr.DataArray(elpd_i, dims="round", coords=rounds, name="loo_i"),
        "pareto_k": xr.DataArray(k, dims="round", coords=rounds, name="pareto_shape"),
        "scale": "log",
        "good_k": min(1 - 1 / np.log10(n_samples), 0.7),  # as arviz.loo reports it
        "n_moment_matched": int(sum(p.n_moment_matched for p in parts)),
    }
    return ELPDData(data=list(fields.values()), index=list(fields))
