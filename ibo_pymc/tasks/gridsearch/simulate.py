"""Simulated participants of the grid task, on the study's own reward environments; recovery and SBC.

A simulated round uses one environment of the participant's class (rough or
smooth; the study's ``roughEnvironment.json`` / ``smoothEnvironment.json``,
rewards 0..1 per option). The first choice of a round is uniform (the model
never predicts it); every later choice is drawn from the softmax of the
family's acquisition values under the surrogate's posterior given the round's
earlier choices (:mod:`.choice`, plain rule), exactly the model that is
fitted. The reward shown is ``round(100 y + e)`` with ``e ~ Normal(0, 2)``
(the study's rewards differ from 100 y by a standard deviation of 2.03,
rounding included; measured on rounds 1-9 of all 129 participants).

:func:`recovery_fit` fits simulated participants of chosen parameters (recovery); :func:`sbc_replicate` draws
them from the prior (simulation-based calibration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ibo_pymc.engine.priors import LogNormalPrior
from ibo_pymc.tasks.gridsearch.choice import HAS_BETA, choice_probabilities, is_local, local_weights
from ibo_pymc.tasks.gridsearch.data import GridRounds, rescale
from ibo_pymc.tasks.gridsearch.likelihood import THETA_NAME, posterior
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet

REWARD_NOISE_SD = 2.0


@dataclass(frozen=True)
class GridTruth:
    """The generating parameters of a simulated participant."""

    family: str
    theta: float
    beta: float
    tau: float
    surrogate: str = "GP"


def simulate_participant(
    truth: GridTruth,
    environments: np.ndarray,
    rng: np.random.Generator,
    *,
    subject: int = 1,
    context: str = "spatial",
    rounds: int = 9,
    trials: int = 20,
    env_class: str | None = None,
    options: OptionSet = GRID_8X8,
) -> GridRounds:
    """One simulated participant: ``rounds`` rounds of ``trials`` choices on environments drawn without
    replacement from ``environments`` (n_env, P): a reward per option of ``options``."""
    n_opt = environments.shape[1]
    if n_opt != options.size:
        raise ValueError(f"environments have {n_opt} options, the option set {options.size}")
    env_ids = rng.choice(len(environments), size=rounds, replace=False)
    choices = np.zeros((rounds, trials), dtype=np.int64)
    z = np.zeros((rounds, trials))
    beta = truth.beta if truth.family in HAS_BETA else 0.0
    wloc = local_weights(options) if is_local(truth.family) else None
    for r, e in enumerate(env_ids):
        for t in range(trials):
            if t == 0:
                c = int(rng.integers(n_opt))
            else:
                ch, y = choices[r : r + 1, : t + 1], rescale(z[r : r + 1, : t + 1])
                mu, var, _, _ = posterior(ch, y, truth.surrogate, truth.theta, options=options)
                best = np.asarray(y[0, :t].max())
                w = None if wloc is None else wloc[choices[r, t - 1]]
                p = choice_probabilities(mu[0, t - 1], var[0, t - 1], best, truth.family, beta, truth.tau, weights=w)
                c = int(rng.choice(n_opt, p=p / p.sum()))
            choices[r, t] = c
            z[r, t] = np.round(100.0 * environments[e, c] + REWARD_NOISE_SD * rng.standard_normal())
    return GridRounds(subject, context, np.arange(1, rounds + 1), choices, z, env_class, env_ids, options)


def to_table(rounds: list[GridRounds]) -> pd.DataFrame:
    """Simulated participants as the tidy table of choices (:mod:`ibo_pymc.tasks.gridsearch.data`)."""
    parts = []
    for gr in rounds:
        R, T = gr.choices.shape
        parts.append(
            pd.DataFrame(
                {
                    "subject": gr.subject,
                    "context": gr.context,
                    "round": np.repeat(gr.rounds, T),
                    "trial": np.tile(np.arange(1, T + 1), R),
                    "x": gr.options.coords[gr.choices.ravel(), 0],
                    "y": gr.options.coords[gr.choices.ravel(), 1],
                    "z": gr.z.ravel(),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def recovery_truths(
    n: int, rng: np.random.Generator, families=("UCB", "EI", "PI", "mean", "variance")
) -> list[GridTruth]:
    """``n`` generating parameter sets, families in turn, parameters in the ranges people show
    (lambda 0.5-2, beta 0.1-0.6 for UCB, tau 0.02-0.1 on UCB/mean's value scale; wider for EI, PI
    and variance, whose values live on other scales)."""
    tau_range = {
        "UCB": (0.02, 0.1),
        "mean": (0.02, 0.1),
        "EI": (0.005, 0.03),
        "PI": (0.03, 0.15),
        "variance": (0.02, 0.1),
    }
    out = []
    for i in range(n):
        fam = families[i % len(families)]
        lo, hi = tau_range[fam]
        out.append(
            GridTruth(
                fam,
                float(np.exp(rng.uniform(np.log(0.5), np.log(2.0)))),
                float(rng.uniform(0.1, 0.6)) if fam in HAS_BETA else 0.0,
                float(np.exp(rng.uniform(np.log(lo), np.log(hi)))),
            )
        )
    return out


def recovery_row(truth: GridTruth, gr: GridRounds, idata, prob: float = 0.9) -> dict:
    """How one fit recovers its truth: family probability of the truth, posterior means and interval coverage."""
    import arviz as az

    from ibo_pymc.engine.results import conditional
    from ibo_pymc.tasks.gridsearch.model import family_probabilities

    theta = THETA_NAME[truth.surrogate]  # lambda (GP) or error_variance (BMT)
    probs = family_probabilities(idata)
    row = {
        "subject": gr.subject,
        "family": truth.family,
        theta: truth.theta,
        "beta": truth.beta,
        "tau": truth.tau,
        "p_true_family": float(probs[truth.family]),
        "map_family": str(probs.idxmax()),
    }
    names = [
        (n, conditional(idata, truth.family, n))
        for n in (theta, "tau", "beta")
        if n != "beta" or truth.family in HAS_BETA
    ]
    for n, da in names:
        v = da.values.ravel()
        lo, hi = az.hdi(v, hdi_prob=prob)
        true = getattr(truth, "theta" if n == theta else n)
        row[f"{n}_mean"] = float(v.mean())
        row[f"{n}_lo"], row[f"{n}_hi"] = float(lo), float(hi)
        row[f"{n}_covered"] = bool(lo <= true <= hi)
    return row


def recovery_fit(truth: GridTruth, environments: np.ndarray, seed: int, subject: int, settings: dict) -> dict:
    """One simulated participant fitted (one execution-layer job): its :func:`recovery_row` and the worst
    R-hat among the families whose convergence is required."""
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, fit

    gr = simulate_participant(truth, environments, np.random.default_rng(seed), subject=subject)
    config = GridSearchConfig(**{"cores": 1, **settings})
    idata = fit(gr, config)
    row = recovery_row(truth, gr, idata)
    ev = idata["component_evidence"]
    row["r_hat_max"] = float(ev["r_hat"].values[ev["probability"].values >= config.relevance].max())
    return row


def recovery(environments: dict, n: int, seed: int = 0, *, executor=None, **settings) -> pd.DataFrame:
    """Parameter and family recovery: ``n`` participants simulated on the study's own environments (smooth and
    rough in turn, 9 rounds of 20 choices) from known (family, theta, beta, tau) (:func:`recovery_truths`: the
    families in turn), each fitted (``settings``: the fit's, e.g. draws); one :func:`recovery_row` each."""
    from ibo_pymc.execution import Job, run_jobs

    ss = np.random.SeedSequence(seed)
    truths = recovery_truths(n, np.random.default_rng(ss.spawn(1)[0]))
    seeds = [int(s.generate_state(1)[0]) for s in ss.spawn(n + 1)[1:]]
    jobs = [
        Job(
            f"simulated participant {i + 1} ({t.family})",
            recovery_fit,
            (t, environments["smooth" if i % 2 == 0 else "rough"], seeds[i], i + 1, settings),
        )
        for i, t in enumerate(truths)
    ]
    return pd.DataFrame(run_jobs(jobs, executor, label="recovery").raise_failures().results)


def recovery_report(table: pd.DataFrame) -> str:
    """The recovery in a few lines: the share whose true family is the most probable, the mean probability of
    the true family, per family; the coverage of the 90% intervals and the rank correlation of the posterior
    means with the truth, per parameter; the worst R-hat."""
    from scipy import stats

    t = table
    lines = [
        f"{len(t)} simulated participants (families in turn: {', '.join(sorted(t.family.unique()))})",
        f"true family most probable: {t['map_family'].eq(t['family']).mean():.2f}; "
        f"mean P(true family): {t['p_true_family'].mean():.3f}",
    ]
    by = (
        t.assign(correct=t.map_family.eq(t.family))
        .groupby("family")
        .agg(n=("subject", "size"), correct=("correct", "mean"), p_true=("p_true_family", "mean"))
    )
    lines.append(by.round(3).to_string())
    for name in ("lambda", "error_variance", "beta", "tau"):
        if f"{name}_covered" not in t:
            continue
        c = t[f"{name}_covered"].dropna()
        sub = t[t[f"{name}_mean"].notna()]
        rho = stats.spearmanr(sub[name], sub[f"{name}_mean"]).statistic if len(sub) > 1 else float("nan")
        lines.append(
            f"{name:>6}: 90% interval covers the truth in {c.astype(bool).mean():.2f} of {len(c)}; "
            f"rank correlation of posterior mean with truth {rho:.3f}"
        )
    lines.append(f"worst R-hat among relevant families: {t['r_hat_max'].max():.3f}")
    return "\n".join(lines)


def sbc_replicate(
    environments: np.ndarray,
    seed,
    *,
    surrogate: str = "GP",
    n_ranks: int = 99,
    draws: int = 500,
    tune: int = 300,
    chains: int = 2,
) -> dict:
    """One replicate of simulation-based calibration (:mod:`ibo_pymc.engine.calibration`): the family uniform over
    the five, the surrogate's parameter, beta and tau from their log-normal priors (beta drawn for every family:
    a non-UCB draw's beta is a prior draw in the posterior too), a simulated participant of the study's design
    (:func:`simulate_participant`), its fit, and the ranks of the true values among ``n_ranks`` posterior draws."""
    from ibo_pymc.engine.calibration import posterior_ranks
    from ibo_pymc.engine.results import component_table
    from ibo_pymc.tasks.gridsearch.choice import FAMILIES
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, GridSearchModel

    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s_prior, s_data, s_fit, s_thin = ss.spawn(4)
    config = GridSearchConfig(
        surrogate=surrogate, draws=draws, tune=tune, chains=chains, seed=int(s_fit.generate_state(1)[0])
    )
    rng = np.random.default_rng(s_prior)
    family = str(rng.choice(list(FAMILIES)))
    theta_name = THETA_NAME[surrogate]
    truth = {n: float(LogNormalPrior(*config.priors[n]).draw(rng)) for n in (theta_name, "beta", "tau")}
    gr = simulate_participant(
        GridTruth(family, truth[theta_name], truth["beta"], truth["tau"], surrogate),
        environments,
        np.random.default_rng(s_data),
        subject=0,
    )
    m = GridSearchModel(gr, config)
    idata = m.fit()
    out = posterior_ranks(idata.posterior, truth, family, np.random.default_rng(s_thin), n_ranks)
    out["max_rhat"] = float(np.nanmax(component_table(idata)["r_hat"]))
    return out
