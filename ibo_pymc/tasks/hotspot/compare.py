"""Model comparison of u, ũ and ũ± (docs: explanation/loo).

* :func:`loo_table` -- PSIS-LOO of each model's fit of one subject
  (:func:`arviz.loo` on the ``log_likelihood`` group) and :func:`arviz.compare`
  (stacking weights), with the largest Pareto k of each fit.
* :func:`reliable_loo` -- PSIS-LOO that can be trusted for every round, in
  three tiers: PSIS per mixture component on the components' own draws
  (:mod:`ibo_pymc.tasks.hotspot.loo`); moment matching of the components whose Pareto k
  exceeds 0.7 (:func:`arviz_stats.loo_moment_match`); and for each round still
  above 0.7, an exact refit of the model without it (:func:`arviz.reloo` with
  the engine's :class:`~ibo_pymc.engine.loo.UnitRefit`, an :class:`arviz.SamplingWrapper`), so its elpd is exact
  up to Monte-Carlo error. A fit takes seconds, so exact refits are affordable.
* :func:`heldout_lppd` -- the paper's protocol with the sampled model: the log
  pointwise predictive density of the test rounds, summed, under the posterior
  of a fit to the training rounds, ``sum_i log mean_s p(theta2_i | draw s)``.
* :func:`fit_or_load` -- reuse a saved fit (``subject-NN-MODEL.nc``) when it
  was made from the same rounds, otherwise fit and save it.
* :func:`compare_subject` -- one subject's rows of the comparison table.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.forward.variants import MODELS
from ibo_pymc.tasks.hotspot.loo import K_THRESHOLD, mixture_loo, quiet_pareto

COLUMNS = (
    "subject",
    "model",
    "elpd_loo",
    "se",
    "p_loo",
    "elpd_diff",
    "weight",
    "max_pareto_k",
    "n_refit",
    "holdout_lppd",
)


def _psis_loo(idata):
    import arviz as az

    with quiet_pareto():  # the caller reports k
        return az.loo(idata, pointwise=True)


def reliable_loo(fit, *, k_threshold: float = K_THRESHOLD, moment_match: bool = True, log=None):
    """PSIS-LOO of a fitted :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel` that every round can trust.

    Per-component PSIS with moment matching (:func:`ibo_pymc.tasks.hotspot.loo.mixture_loo`),
    then an exact refit of every round whose k is still above ``k_threshold``.
    Returns ``(elpd, n_refit)``: an ArviZ ``ELPDData`` whose ``pareto_k`` is the k
    of the estimate used for each round (0 for refit rounds, whose elpd is
    exact), with an extra entry ``n_moment_matched``, and the number of rounds refit.
    """
    from ibo_pymc.engine.loo import UnitRefit, refit_unreliable

    loo = mixture_loo(fit, moment_match=moment_match, k_threshold=k_threshold)
    return refit_unreliable(loo, UnitRefit(fit, log=log), k_threshold=k_threshold)


def loo_table(fits: dict, reference: str = "tau_pm", *, refit: bool = True, log=None) -> pd.DataFrame:
    """PSIS-LOO per model (index: model) with ``arviz.compare``'s ranking and weights.

    ``fits`` maps a model name to a fitted :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`
    (:func:`reliable_loo`: per-component PSIS, moment matching, exact refits;
    ``refit=False`` stops before the refits) or to an InferenceData with a
    ``log_likelihood`` group (plain PSIS-LOO on its pooled draws). Columns ``diff_ref`` and ``se_diff_ref`` hold each
    model's elpd_loo minus the ``reference`` model's and the standard error of
    that paired difference; ``n_refit`` counts the refitted rounds.
    """
    import arviz as az

    loos, n_refit = {}, {}
    for m, f in fits.items():
        if isinstance(f, tuple):  # (ELPDData, n_refit) from reliable_loo
            loos[m], n_refit[m] = f
        elif not hasattr(f, "idata"):
            loos[m], n_refit[m] = _psis_loo(f), 0
        elif refit:
            loos[m], n_refit[m] = reliable_loo(f, log=log)
        else:
            loos[m], n_refit[m] = mixture_loo(f), 0
    with warnings.catch_warnings():
        # ArviZ 0.23's compare sorts with inplace=True, which pandas >= 3.1 deprecates (not actionable here)
        warnings.filterwarnings("ignore", message="The inplace keyword in DataFrame.sort_values")
        cmp = az.compare(loos, ic="loo") if len(fits) > 1 else None
    ref = loos.get(reference)
    rows = []
    for m, lo in loos.items():
        if ref is not None:
            d = lo.loo_i.values - ref.loo_i.values
            diff_ref, se_ref = float(d.sum()), float(np.sqrt(len(d) * d.var()))
        else:
            diff_ref = se_ref = np.nan
        rows.append(
            {
                "model": m,
                "elpd_loo": float(lo.elpd_loo),
                "se": float(lo.se),
                "p_loo": float(lo.p_loo),
                "elpd_diff": float(cmp.loc[m, "elpd_diff"]) if cmp is not None else 0.0,
                "weight": float(cmp.loc[m, "weight"]) if cmp is not None else 1.0,
                "max_pareto_k": float(np.max(lo.pareto_k.values)),
                "n_refit": n_refit[m],
                "n_moment_matched": int(lo.get("n_moment_matched", 0)),
                "rank": int(cmp.loc[m, "rank"]) if cmp is not None else 0,
                "diff_ref": diff_ref,
                "se_diff_ref": se_ref,
            }
        )
    return pd.DataFrame(rows).set_index("model")


def heldout_lppd(idata, test: SubjectObservations, *, tables=None) -> float:
    """Summed log pointwise predictive density of held-out rounds under a fit's posterior."""
    if test.n_rounds == 0:
        return 0.0
    from ibo_pymc.tasks.hotspot.model.pointwise import heldout_loglik

    ll = heldout_loglik(idata, test, tables=tables)
    top = ll.max(axis=0)
    return float((top + np.log(np.exp(ll - top).mean(axis=0))).sum())


def fit_path(folder, subject: int, model: str, tag: str = "") -> Path:
    from ibo_pymc.tasks.hotspot.model.config import fit_file_name

    return Path(folder) / fit_file_name(subject, model, tag)


def fit_or_load(
    obs: SubjectObservations, model: str, folder, *, tag: str = "", config=None, progress: bool = False, log=None
):
    """A fit of ``obs`` under ``model``: the saved one in ``folder`` if it used the same rounds (and, when
    ``config`` is given, the same configuration, by its hash), else a new one (saved)."""
    from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel
    from ibo_pymc.tasks.hotspot.model.fit_many import load_if_current

    path = fit_path(folder, obs.subject, model, tag)
    cfg = FitConfig(model=model) if config is None else config.replace(model=model)
    if path.is_file():
        m, why = load_if_current(path, obs, cfg, any_settings=config is None)
        if m is not None:
            return m
        if log:
            log(f"{path} was fitted with {why}; fitting again")
    m = IBOModel(obs, config=cfg)
    m.fit(progress=progress)
    m.save(path)
    return m


def compare_subject(
    obs: SubjectObservations, split, folder, *, config=None, models=MODELS, log=None, refit: bool = True
) -> pd.DataFrame:
    """One subject's comparison rows (columns :data:`COLUMNS`); ``refit``: exact refits of high-k rounds."""
    fits = {m: fit_or_load(obs, m, folder, config=config, log=log) for m in models}
    table = loo_table(fits, refit=refit, log=log)
    if split is not None:
        train, test = split.partition(obs)
        for m in models:
            tm = fit_or_load(train, m, folder, tag="-train", config=config, log=log)
            table.loc[m, "holdout_lppd"] = heldout_lppd(tm.idata, test, tables=tm.tables)
    else:
        table["holdout_lppd"] = np.nan
    table = table.reset_index()
    table.insert(0, "subject", obs.subject)
    return table[[*COLUMNS, "n_moment_matched", "rank", "diff_ref", "se_diff_ref"]]


def cohort_totals(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model: summed elpd_loo (with the se of the sum) and held-out lppd; wins by LOO rank."""
    g = rows.groupby("model", sort=False)
    out = pd.DataFrame(
        {
            "elpd_loo": g["elpd_loo"].sum(),
            "se": np.sqrt(g["se"].apply(lambda s: (s**2).sum())),
            "holdout_lppd": g["holdout_lppd"].sum(min_count=1),
            "best_by_loo": g["rank"].apply(lambda r: int((r == 0).sum())),
            "max_pareto_k": g["max_pareto_k"].max(),
            "n_refit": g["n_refit"].sum(),
            **({"n_moment_matched": g["n_moment_matched"].sum()} if "n_moment_matched" in rows else {}),
        }
    )
    return out


def compare_cohort(data, subjects, folder, *, config=None, split=None, refit: bool = True, executor=None, log=None):
    """u, ũ and ũ± compared for every subject (:func:`compare_subject`, one job per subject on ``executor``,
    after every fit, and with ``split`` every fit of the training rounds, is made or reused in ``folder``): a
    :class:`~ibo_pymc.tasks.base.Comparison` whose report has the cohort's totals and the rounds whose LOO
    needed moment matching or an exact refit."""
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.base import Comparison
    from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

    if log:
        n = len(subjects)
        log(
            f"fitting or loading u, ũ, ũ± for {n} subject{'s' if n != 1 else ''}"
            + (" (all rounds and training rounds)" if split else "")
        )
    fits = fit_cohort(cohort_jobs(data, subjects, MODELS, config, split=split), folder, executor=executor, log=log)
    failed = {j.obs.subject for j, p in zip(fits.jobs, fits.paths) if p is None}
    jobs = [
        Job(f"subject {s}", compare_subject, (data.observations(s), split, folder), {"config": config, "refit": refit})
        for s in subjects
        if s not in failed
    ]
    out = run_jobs(jobs, executor, label="comparisons")
    failures = [*fits.failures, *out.failures]
    rows = [r for r in out.results if r is not None]
    if not rows:
        return Comparison(None, "", failures, COLUMNS)
    table = pd.concat(rows, ignore_index=True)
    return Comparison(table, _report(table, len(subjects)), failures, COLUMNS)


def _report(table: pd.DataFrame, n_subjects: int) -> str:
    def fmt(v):
        return f"{v:.2f}"

    with pd.option_context("display.width", 140, "display.max_rows", 500):
        lines = [table[list(COLUMNS)].to_string(index=False, float_format=fmt)]
        if n_subjects > 1:
            lines += [
                "\ncohort totals (se of the summed elpd_loo; best_by_loo = subjects where the model ranks first)",
                cohort_totals(table).to_string(float_format=fmt),
            ]
    mm = table[table["n_moment_matched"] > 0]
    if len(mm):
        lines.append(
            f"\nmoment matching brought Pareto k down in {int(mm['n_moment_matched'].sum())} (component, "
            "round) estimates: "
            + ", ".join(f"subject {r.subject} {r.model} ({r.n_moment_matched})" for r in mm.itertuples())
        )
    refit = table[table["n_refit"] > 0]
    if len(refit):
        lines.append(
            f"\nrounds with Pareto k > 0.7 were refitted exactly ({int(refit['n_refit'].sum())} in all): "
            + ", ".join(f"subject {r.subject} {r.model} ({r.n_refit})" for r in refit.itertuples())
        )
    high = table[table["max_pareto_k"] > 0.7]
    if len(high):  # only without the refits
        lines.append(
            "\nPareto k > 0.7 (PSIS-LOO unreliable for some rounds; see arviz.loo): "
            + ", ".join(f"subject {r.subject} {r.model} ({r.max_pareto_k:.2f})" for r in high.itertuples())
        )
    return "\n".join(lines)
