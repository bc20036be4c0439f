"""Simulated participants of the grid task, on the study's own reward environments; parameter recovery.

A simulated round uses one environment of the participant's class (rough or
smooth; the study's ``roughEnvironment.json`` / ``smoothEnvironment.json``,
rewards 0..1 per option). The first choice of a round is uniform (the model
never predicts it); every later choice is drawn from the softmax of the
family's acquisition values under the surrogate's posterior given the round's
earlier choices (:mod:`.choice`, plain rule), exactly the model that is
fitted. The reward shown is ``round(100 y + e)`` with ``e ~ Normal(0, 2)``
(the study's rewards differ from 100 y by a standard deviation of 2.03,
rounding included; measured on rounds 1-9 of all 129 participants).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ibo_pymc.tasks.gridsearch.choice import HAS_BETA, choice_probabilities
from ibo_pymc.tasks.gridsearch.data import SIDE, GridRounds, rescale
from ibo_pymc.tasks.gridsearch.likelihood import THETA_NAME, posterior

REWARD_NOISE_SD = 2.0


@dataclass(frozen=True)
class GridTruth:
    """The generating parameters of a simulated participant."""

    family: str
    theta: float
    beta: float
    tau: float
    surrogate: str = "GP"


def simulate_participant(truth: GridTruth, environments: np.ndarray, rng: np.random.Generator, *, subject: int = 1,
                         context: str = "spatial", rounds: int = 9, trials: int = 20,
                         env_class: str | None = None) -> GridRounds:
    """One simulated participant: ``rounds`` rounds of ``trials`` choices on environments drawn without
    replacement from ``environments`` (n_env, 64)."""
    n_opt = environments.shape[1]
    env_ids = rng.choice(len(environments), size=rounds, replace=False)
    choices = np.zeros((rounds, trials), dtype=np.int64)
    z = np.zeros((rounds, trials))
    beta = truth.beta if truth.family in HAS_BETA else 0.0
    for r, e in enumerate(env_ids):
        for t in range(trials):
            if t == 0:
                c = int(rng.integers(n_opt))
            else:
                ch, y = choices[r:r + 1, :t + 1], rescale(z[r:r + 1, :t + 1])
                mu, var, _, _ = posterior(ch, y, truth.surrogate, truth.theta)
                best = np.asarray(y[0, :t].max())
                p = choice_probabilities(mu[0, t - 1], var[0, t - 1], best, truth.family, beta, truth.tau)
                c = int(rng.choice(n_opt, p=p / p.sum()))
            choices[r, t] = c
            z[r, t] = np.round(100.0 * environments[e, c] + REWARD_NOISE_SD * rng.standard_normal())
    return GridRounds(subject, context, np.arange(1, rounds + 1), choices, z, env_class, env_ids)


def to_table(rounds: list[GridRounds]) -> pd.DataFrame:
    """Simulated participants as the tidy table of choices (:mod:`.data`)."""
    parts = []
    for gr in rounds:
        R, T = gr.choices.shape
        parts.append(pd.DataFrame({
            "subject": gr.subject, "context": gr.context,
            "round": np.repeat(gr.rounds, T), "trial": np.tile(np.arange(1, T + 1), R),
            "x": (gr.choices // SIDE).ravel(), "y": (gr.choices % SIDE).ravel(), "z": gr.z.ravel(),
        }))
    return pd.concat(parts, ignore_index=True)


def recovery_truths(n: int, rng: np.random.Generator, families=("UCB", "EI", "PI", "mean", "variance")) -> list[GridTruth]:
    """``n`` generating parameter sets, families in turn, parameters in the ranges people show
    (lambda 0.5-2, beta 0.1-0.6 for UCB, tau 0.02-0.1 on UCB/mean's value scale; wider for EI, PI
    and variance, whose values live on other scales)."""
    tau_range = {"UCB": (0.02, 0.1), "mean": (0.02, 0.1), "EI": (0.005, 0.03), "PI": (0.03, 0.15), "variance": (0.02, 0.1)}
    out = []
    for i in range(n):
        fam = families[i % len(families)]
        lo, hi = tau_range[fam]
        out.append(GridTruth(fam, float(np.exp(rng.uniform(np.log(0.5), np.log(2.0)))),
                             float(rng.uniform(0.1, 0.6)) if fam in HAS_BETA else 0.0,
                             float(np.exp(rng.uniform(np.log(lo), np.log(hi))))))
    return out


def recovery_row(truth: GridTruth, gr: GridRounds, idata, prob: float = 0.9) -> dict:
    """How one fit recovers its truth: family probability of the truth, posterior means and interval coverage."""
    import arviz as az

    from ibo_pymc.tasks.gridsearch.model import family_probabilities

    cond = idata["conditional_posterior"]
    theta = THETA_NAME[truth.surrogate]  # lambda (GP) or error_variance (BMT)
    probs = family_probabilities(idata)
    row = {"subject": gr.subject, "family": truth.family, theta: truth.theta, "beta": truth.beta, "tau": truth.tau,
           "p_true_family": float(probs[truth.family]), "map_family": str(probs.idxmax())}
    def given(n):  # a parameter of several families has a component dim; of one family, not
        return cond[n].sel(component=truth.family) if "component" in cond[n].dims else cond[n]

    names = [(theta, given(theta)), ("tau", given("tau"))]
    if truth.family in HAS_BETA:
        names.append(("beta", cond["beta"]))
    for n, da in names:
        v = da.values.ravel()
        lo, hi = az.hdi(v, hdi_prob=prob)
        true = getattr(truth, "theta" if n == theta else n)
        row[f"{n}_mean"] = float(v.mean())
        row[f"{n}_lo"], row[f"{n}_hi"] = float(lo), float(hi)
        row[f"{n}_covered"] = bool(lo <= true <= hi)
    return row
