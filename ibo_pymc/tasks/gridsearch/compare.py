"""Comparison for the grid task: PSIS-LOO by round, and leave-one-round-out held-out lppd.

* :func:`loo_by_round` -- PSIS-LOO of a fit with the round as the unit left out
  (the ``log_likelihood`` group holds each round's log-likelihood at the
  family-marginalised draws), with the Pareto k of each round;
* :func:`predictive_loglik` -- the log-likelihood of other rounds (held out)
  at a fit's draws, hence the log pointwise predictive density
  ``lppd = log mean_s p(round | draw s)``;
* :func:`compare_surrogates` -- the GP against the Bayesian mean tracker by the engine's reliable LOO
  (``arviz.compare``), each with the family marginalised (``ibo-compare --task gridsearch``);
* :func:`heldout` -- the exact leave-one-round-out protocol of the published
  maximum-likelihood comparison, with Bayesian fits: each round is predicted by
  the posterior of the other rounds (one fit per round, on any executor). Its
  ``-lppd`` is on the scale of the published held-out ``nLL``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from ibo_pymc.tasks.gridsearch.data import GridRounds


def loo_by_round(idata):
    """PSIS-LOO (ArviZ) over rounds: ``elpd_loo``, its SE, and the pointwise values with Pareto k."""
    import arviz as az

    return az.loo(idata, var_name="choices", pointwise=True)


def predictive_loglik(idata, gr: GridRounds) -> np.ndarray:
    """Log-likelihood of each round of ``gr`` at every marginal draw of ``idata``: (draws, rounds)
    (:meth:`~.model.GridSearchModel.predictive_loglik`)."""
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, GridSearchModel

    cfg = GridSearchConfig.from_json(idata.posterior.attrs["config"])
    return GridSearchModel(gr, cfg).predictive_loglik(idata, gr)


def family_draws(idata) -> np.ndarray:
    """The family index of every marginal draw (flattened over chains)."""
    return idata.posterior["family_draw"].values.ravel()


def lppd(ll: np.ndarray) -> np.ndarray:
    """log mean_s exp(ll[s, r]) per round."""
    return special.logsumexp(ll, axis=0) - np.log(ll.shape[0])


def heldout_fold(gr: GridRounds, k: int, config) -> dict:
    """Round ``k`` held out: the fit of the other rounds, the held-out round's lppd and the fit's family
    probabilities (one task of :func:`heldout`)."""
    from ibo_pymc.tasks.gridsearch.model import family_probabilities, fit

    train = gr.select([r for r in gr.rounds if r != k])
    test = gr.select([k])
    idata = fit(train, config)
    probs = family_probabilities(idata)
    return {
        "participant": gr.subject,
        "context": gr.context,
        "round": int(k),
        "lppd": float(lppd(predictive_loglik(idata, test))[0]),
        **{f"p_{f}": float(p) for f, p in probs.items()},
    }


def heldout(gr: GridRounds, config=None, *, executor=None) -> pd.DataFrame:
    """Leave-one-round-out: one Bayesian fit per held-out round; the held-out round's lppd (and the fit's
    family probabilities), one row per round."""
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig

    config = config or GridSearchConfig()
    tasks = [
        Job(f"participant {gr.subject}, {gr.context}, round {k} held out", heldout_fold, (gr, int(k), config))
        for k in gr.rounds
    ]
    return pd.DataFrame(run_jobs(tasks, executor, label="held-out rounds").raise_failures().results)


#: the columns of :func:`compare_surrogates`
COMPARE_COLUMNS = (
    "participant",
    "context",
    "surrogate",
    "rank",
    "elpd_loo",
    "se",
    "p_loo",
    "elpd_diff",
    "dse",
    "weight",
    "max_pareto_k",
    "n_refit",
    "p_UCB",
    "p_EI",
    "p_PI",
    "p_mean",
    "p_variance",
)


def fit_or_load(gr: GridRounds, config, folder=None):
    """The fit of ``gr`` with ``config``: the saved one in ``folder`` when it was made from the same choices with
    the same configuration, else a new fit (saved there when a folder is given;
    :meth:`~.model.GridSearchModel.fit_or_load`)."""
    from pathlib import Path

    from ibo_pymc.tasks.gridsearch.model import GridSearchModel, fit, fit_file_name

    if folder is None:
        return fit(gr, config)
    return GridSearchModel.fit_or_load(
        gr, config, Path(folder) / fit_file_name(gr.subject, gr.context, config.surrogate)
    ).idata


def fit_or_load_path(gr: GridRounds, config, folder) -> str:
    """:func:`fit_or_load` as one execution-layer job: the path of the saved fit (the draws stay on disk)."""
    from pathlib import Path

    from ibo_pymc.tasks.gridsearch.model import fit_file_name

    fit_or_load(gr, config, folder)
    return str(Path(folder) / fit_file_name(gr.subject, gr.context, config.surrogate))


def cohort_fits(
    table, subjects, folder, *, context: str = "spatial", surrogates=("GP", "BMT"), executor=None, **settings
):
    """Every participant's fit under every surrogate in one context, reusing saved fits in ``folder``: the
    evidences a cohort's BMS reads. Returns the execution layer's outcome (results: the fits' paths)."""
    from dataclasses import replace

    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig
    from ibo_pymc.tasks.gridsearch.studies import grid_rounds

    config = GridSearchConfig(**settings)
    jobs = [
        Job(
            f"participant {s}, {context}, {sur}",
            fit_or_load_path,
            (grid_rounds(table, s, context), replace(config, surrogate=sur), str(folder)),
        )
        for s in subjects
        for sur in surrogates
    ]
    return run_jobs(jobs, executor, label="fits")


def compare_surrogates(gr: GridRounds, config=None, folder=None, surrogates=("GP", "BMT")) -> pd.DataFrame:
    """The GP against the mean tracker (the study's model comparison) for one participant and context, by the
    engine's reliable LOO over rounds (per-family PSIS, moment matching, exact refits; ``arviz.compare``), each
    with the acquisition family marginalised: one row per surrogate (:data:`COMPARE_COLUMNS`). Saved fits in
    ``folder`` are reused."""
    import warnings
    from dataclasses import replace

    import arviz as az

    from ibo_pymc.tasks.gridsearch.model import (
        GridSearchConfig,
        GridSearchModel,
        family_probabilities,
    )

    config = config or GridSearchConfig()
    fits, loos = {}, {}
    for s in surrogates:
        m = GridSearchModel(gr, replace(config, surrogate=s))
        m.idata = fits[s] = fit_or_load(gr, m.config, folder)
        loos[s] = m.loo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's notices on the table's sorting; the Pareto k are reported
        table = az.compare(loos, ic="loo")
    rows = []
    for s, r in table.iterrows():
        probs = family_probabilities(fits[s])
        rows.append(
            {
                "participant": gr.subject,
                "context": gr.context,
                "surrogate": s,
                "rank": int(r["rank"]),
                "elpd_loo": float(r["elpd_loo"]),
                "se": float(r["se"]),
                "p_loo": float(r["p_loo"]),
                "elpd_diff": float(r["elpd_diff"]),
                "dse": float(r["dse"]),
                "weight": float(r["weight"]),
                "max_pareto_k": float(np.max(loos[s].pareto_k.values)),
                "n_refit": int(loos[s]["n_refit"]),
                **{f"p_{f}": float(probs.get(f, np.nan)) for f in ("UCB", "EI", "PI", "mean", "variance")},
            }
        )
    return pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))


def compare_cohort(table, subjects, folder, *, context: str = "spatial", executor=None, log=None, **settings):
    """The GP against the mean tracker for every participant in one context (:func:`compare_surrogates`, one
    job per participant on ``executor``; saved fits in ``folder`` reused): a
    :class:`~ibo_pymc.tasks.base.Comparison` whose report says how often each surrogate ranks first and the
    summed elpd_loo."""
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.base import Comparison
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig
    from ibo_pymc.tasks.gridsearch.studies import grid_rounds

    config = GridSearchConfig(**settings)
    jobs = [
        Job(f"participant {s}, {context}", compare_surrogates, (grid_rounds(table, s, context), config, str(folder)))
        for s in subjects
    ]
    out = run_jobs(jobs, executor, label="comparisons")
    rows = [r for r in out.results if r is not None]
    if not rows:
        return Comparison(None, "", out.failures, COMPARE_COLUMNS)
    res = pd.concat(rows, ignore_index=True)
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        lines = [res[list(COMPARE_COLUMNS)].to_string(index=False, float_format=lambda v: f"{v:.2f}")]
    if len(subjects) > 1:
        best = res[res["rank"] == 0]["surrogate"].value_counts()
        lines.append(
            "\nbest by reliable LOO: "
            + ", ".join(f"{s} for {n}" for s, n in best.items())
            + f" of {len(subjects)} participants ({context}); summed elpd_loo: "
            + ", ".join(f"{s} {v:.1f}" for s, v in res.groupby("surrogate")["elpd_loo"].sum().items())
        )
    return Comparison(res, "\n".join(lines), out.failures, COMPARE_COLUMNS)
