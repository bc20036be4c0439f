"""Wu et al. (2018)'s generalisation finding from the Bayesian fits (issue 32, item 4): how far people
generalise, the GP surrogate's length-scale lambda, against the length-scale the environments were drawn with.

The environments of each class were drawn from a GP with an RBF kernel of length-scale 1 (rough) or 2 (smooth),
in units of one option step and with the kernel the surrogate uses (``exp(-d^2 / (2 lambda^2))``,
:mod:`ibo_pymc.tasks.gridsearch.surrogate`), so a participant's lambda is directly comparable with
:data:`TRUE_LAMBDA`. The paper's finding is that people generalise less than the environments allow: lambda below
the truth, in both classes.

:func:`participant_table`: per participant, lambda's posterior median and HDI (family-marginalised, the GP
fits'), beside the participant's environment class and whether the HDI lies wholly below (or above) the truth.

:func:`generalisation_table`: per environment class, the cohort's median lambda with an interval that carries
both sources of uncertainty -- which participants were recruited (resampled with replacement) and what each one's
lambda is (one draw of that participant's posterior per resampled participant) -- and the share of those
resampled cohort medians below the truth. The interval is of the cohort median, not of a population parameter;
the hierarchical model (``ibo-cohort hierarchical``) gives the latter.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ibo_pymc.engine.config import HDI_PROB

#: the environments' length-scale per class (Wu et al. 2018, Methods; the study's README)
TRUE_LAMBDA = {"rough": 1.0, "smooth": 2.0}
#: how many resampled cohorts :func:`generalisation_table` draws by default
RESAMPLES = 4000


def _read_lambda(path) -> tuple[int, str, str, np.ndarray | None]:
    """``(participant, experiment or context, surrogate, lambda's posterior draws or None)`` of one saved fit."""
    from ibo_pymc.engine.schema import read_fit

    post = read_fit(path).posterior
    lam = np.asarray(post["lambda"].values).ravel() if "lambda" in post else None
    return int(post.attrs["subject"]), str(post.attrs["context"]), str(post.attrs.get("surrogate")), lam


def lambda_draws(path) -> tuple[int, str, np.ndarray]:
    """``(participant, experiment or context, lambda's posterior draws)`` of one saved GP fit; a fit of another
    surrogate (no lambda) is refused."""
    from ibo_pymc.errors import InputError

    subject, part, surrogate, lam = _read_lambda(path)
    if lam is None:
        raise InputError(f"a fit of the {surrogate} surrogate has no lambda", path=path, field="fit")
    return subject, part, lam


def gp_lambda_draws(paths) -> dict:
    """participant -> lambda's posterior draws, from those of the saved fits ``paths`` that are GP fits (the
    others, e.g. the mean tracker's, skipped); two GP fits of one participant are refused."""
    from ibo_pymc.errors import InputError

    out = {}
    for path in paths:
        p, _, _, lam = _read_lambda(path)
        if lam is None:
            continue
        if p in out:
            raise InputError(f"participant {p} has two GP fits among those given", path=path, field="fits")
        out[p] = lam
    return out


def cohort_tables(dataset, paths, *, seed: int = 0) -> dict:
    """What ``ibo-cohort run`` writes beside the BMS for Wu et al. (2018)'s data (one experiment):
    ``generalisation.csv`` (:func:`generalisation_table`) and ``generalisation_participants.csv``
    (:func:`participant_table`), from the GP fits among ``paths``."""
    experiments = sorted(dataset["experiment"].unique())
    experiment = experiments[0] if len(experiments) == 1 else ""
    environments = dataset.groupby("subject")["environment"].first().to_dict()
    draws = gp_lambda_draws(paths)
    return {
        "generalisation.csv": generalisation_table(draws, environments, experiment=experiment, seed=seed),
        "generalisation_participants.csv": participant_table(draws, environments, experiment=experiment),
    }


def participant_table(draws: dict, environments: dict, *, experiment: str = "", prob: float = HDI_PROB) -> pd.DataFrame:
    """One row per participant of ``draws`` (participant -> lambda's posterior draws): its ``environment``
    (``environments``: participant -> ``rough`` | ``smooth``), ``true_lambda``, lambda's posterior median and
    HDI of mass ``prob`` (``lambda_lo``, ``lambda_hi``), ``p_below`` (the posterior probability that lambda is
    below the truth), and ``below`` / ``above`` (the HDI wholly below / above the truth)."""
    import arviz as az

    from ibo_pymc.errors import InputError

    rows = []
    for p in sorted(draws):
        env = environments.get(p)
        if env not in TRUE_LAMBDA:
            raise InputError(
                f"participant {p}: environment {env!r}; expected one of {', '.join(TRUE_LAMBDA)}", field="environment"
            )
        v = np.asarray(draws[p], float)
        lo, hi = az.hdi(v, hdi_prob=prob)
        truth = TRUE_LAMBDA[env]
        rows.append(
            {
                "participant": int(p),
                "experiment": experiment,
                "environment": env,
                "true_lambda": truth,
                "lambda_median": float(np.median(v)),
                "lambda_lo": float(lo),
                "lambda_hi": float(hi),
                "p_below": float(np.mean(v < truth)),
                "below": bool(hi < truth),
                "above": bool(lo > truth),
            }
        )
    return pd.DataFrame(rows)


def generalisation_table(
    draws: dict,
    environments: dict,
    *,
    experiment: str = "",
    prob: float = HDI_PROB,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per environment class (module docstring): ``experiment``, ``environment``, ``true_lambda``,
    ``participants``, ``lambda_median`` (the median of the participants' posterior medians), ``lo``, ``hi``
    (the central interval of mass ``prob`` of the resampled cohort medians), ``p_below`` (the share of them
    below the truth), and ``below`` / ``above`` (participants whose HDI lies wholly below / above it). Seeded:
    the same ``seed`` gives the same intervals."""
    from ibo_pymc.errors import InputError

    if not isinstance(resamples, (int, np.integer)) or isinstance(resamples, bool) or resamples < 1:
        raise InputError(f"expected a whole number >= 1, got {resamples!r}", field="resamples")
    people = participant_table(draws, environments, experiment=experiment, prob=prob)
    rng = np.random.default_rng(seed)
    rows = []
    for env, truth in TRUE_LAMBDA.items():
        mine = people[people["environment"] == env]
        if mine.empty:
            continue
        pool = [np.asarray(draws[p], float) for p in mine["participant"]]
        n = len(pool)
        who = rng.integers(n, size=(resamples, n))
        picked = np.empty((resamples, n))
        for j, v in enumerate(pool):  # one posterior draw for each time participant j is resampled
            hit = who == j
            picked[hit] = v[rng.integers(v.size, size=int(hit.sum()))]
        medians = np.median(picked, axis=1)
        lo, hi = np.quantile(medians, [(1 - prob) / 2, (1 + prob) / 2])
        rows.append(
            {
                "experiment": experiment,
                "environment": env,
                "true_lambda": truth,
                "participants": n,
                "lambda_median": float(mine["lambda_median"].median()),
                "lo": float(lo),
                "hi": float(hi),
                "p_below": float(np.mean(medians < truth)),
                "below": int(mine["below"].sum()),
                "above": int(mine["above"].sum()),
            }
        )
    return pd.DataFrame(rows)
