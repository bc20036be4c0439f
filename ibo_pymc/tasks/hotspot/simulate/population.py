"""Simulated populations: cohorts drawn from known population parameters, and their recovery.

A :class:`PopulationTruth` is the hierarchical model's population level
(:mod:`ibo_pymc.engine.hierarchical`): the family mix, and per parameter the
mean and sd on the logit scale of its prior interval. :func:`simulate_cohort`
draws subjects from it (family, parameters) and their rounds
(:func:`~ibo_pymc.tasks.hotspot.simulate.moves.simulate_moves`). :func:`recovery_replicate`
simulates one cohort, fits every subject alone and then the hierarchical
model, and reports for each population quantity whether its equal-tailed
credible interval covers the truth (repeated over seeded cohorts: coverage).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ibo_pymc.tasks.hotspot.simulate.moves import Truth, simulate_moves

FAMILIES = ("PI", "EI", "UCB")


def _default_mu() -> dict:
    return {"gamma": -1.2, "w": 0.35, "tau_neg": -2.0, "tau_pos": -1.5}


def _default_sigma() -> dict:
    return {"gamma": 0.7, "w": 1.0, "tau_neg": 1.5, "tau_pos": 1.5}


@dataclass(frozen=True)
class PopulationTruth:
    """Population parameters of the hierarchical ũ± model (logit scales of the parameters' prior intervals).
    The defaults resemble the study's fit: mostly UCB, gamma near 0.19, thresholds small and varied."""

    family_frequency: dict = field(default_factory=lambda: {"PI": 0.3, "EI": 0.1, "UCB": 0.6})
    mu: dict = field(default_factory=_default_mu)
    sigma: dict = field(default_factory=_default_sigma)
    mu_shape: dict = field(default_factory=lambda: {"PI": 0.0, "EI": 0.0, "UCB": -1.0})
    sigma_shape: dict = field(default_factory=lambda: {"PI": 0.8, "EI": 0.8, "UCB": 0.8})

    def to_dict(self) -> dict:
        return asdict(self)


def draw_subject(truth: PopulationTruth, rng: np.random.Generator) -> Truth:
    """One subject's family and parameters from the population."""
    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
    from ibo_pymc.tasks.hotspot.forward.priors import PRIORS

    fams = list(truth.family_frequency)
    p = np.array([truth.family_frequency[f] for f in fams], float)
    fam = fams[rng.choice(len(fams), p=p / p.sum())]
    vals = {n: float(PRIORS[n].from_unconstrained(rng.normal(truth.mu[n], truth.sigma[n]))) for n in truth.mu}
    param = float(get_family(fam).prior.from_unconstrained(rng.normal(truth.mu_shape[fam], truth.sigma_shape[fam])))
    return Truth(fam, param, **vals)


def simulate_cohort(truth: PopulationTruth, n_subjects: int, n_rounds: int, seed, *, tables=None):
    """``(subjects' truths, their observations)``: ``n_subjects`` drawn from the population, ``n_rounds`` each."""
    rng = np.random.default_rng(seed)
    truths = [draw_subject(truth, rng) for _ in range(n_subjects)]
    obs = [simulate_moves(t, n_rounds, rng, tables=tables, subject=i + 1) for i, t in enumerate(truths)]
    return truths, obs


def recovery_replicate(
    truth: PopulationTruth,
    n_subjects: int,
    n_rounds: int,
    seed: int,
    *,
    prob: float = 0.9,
    config=None,
    hierarchical: dict | None = None,
) -> pd.DataFrame:
    """One simulated cohort, fitted: per population quantity, the truth, posterior mean, ``prob`` interval and
    whether it covers the truth; plus the mean absolute error of the subjects' estimates of every shared
    parameter, independent vs hierarchical (rows ``quantity == "subject_error"``)."""
    from ibo_pymc.engine.hierarchical import fit_hierarchical
    from ibo_pymc.tasks.hotspot.model.config import FitConfig
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    subjects, obs = simulate_cohort(truth, n_subjects, n_rounds, seed)
    config = (config or FitConfig(draws=500, tune=500)).replace(model="tau_pm", seed=seed)
    fits = []
    for o in obs:
        m = IBOModel(o, config=config)
        m.fit(progress=False, cores=1)
        fits.append(m)
    h = fit_hierarchical(fits, seed=seed, cores=1, **(hierarchical or {"draws": 500, "tune": 500}))
    post = h.idata.posterior
    q = [(1 - prob) / 2, (1 + prob) / 2]
    rows = []

    def add(name, label, value, da):
        lo, hi = (float(v) for v in da.quantile(q).values)
        rows.append(
            {
                "quantity": name,
                "label": label,
                "truth": value,
                "mean": float(da.mean()),
                "lower": lo,
                "upper": hi,
                "covered": bool(lo <= value <= hi),
            }
        )

    for f, v in truth.family_frequency.items():
        add("family_frequency", f, v, post["family_frequency"].sel(family=f))
    for n in truth.mu:
        add("mu", n, truth.mu[n], post["mu"].sel(parameter=n))
        add("sigma", n, truth.sigma[n], post["sigma"].sel(parameter=n))
    for f in truth.mu_shape:
        if any(s.family == f for s in subjects):  # a family nobody used has nothing to recover
            add("mu_shape", f, truth.mu_shape[f], post["mu_shape"].sel(shape_family=f))
    sub = h.idata["subject_posterior"]
    for n in truth.mu:
        true = np.array([getattr(s, n) for s in subjects])
        ind = np.array([float(f.idata.posterior[n].mean()) for f in fits])
        hie = sub[n].mean(("chain", "draw")).values
        rows.append(
            {
                "quantity": "subject_error",
                "label": n,
                "truth": np.nan,
                "mean": np.nan,
                "lower": float(np.abs(ind - true).mean()),
                "upper": float(np.abs(hie - true).mean()),
                "covered": np.nan,
            }
        )
    conv = h.convergence()
    df = pd.DataFrame(rows)
    df.insert(0, "seed", seed)
    df["max_rhat"], df["min_ess"], df["divergences"] = (
        conv["r_hat"],
        min(conv["ess_bulk"], conv["ess_tail"]),
        conv["divergences"],
    )
    w = h.weights_summary()
    for name in ("max_pareto_k", "max_pareto_k_max", "refined", "unreliable"):
        df[name] = w[name]
    return df
