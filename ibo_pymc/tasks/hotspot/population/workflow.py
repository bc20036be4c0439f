"""The hotspot task's population level: its cohort's fits -> random-effects BMS, and the hierarchical model's files.

:func:`run_cohort` fits (or reuses) u, ũ and ũ± for every subject and runs the shared three comparisons
(:func:`ibo_pymc.population.selection.cohort_bms`); :func:`variant_labels` names the models in the figure;
:func:`heldout_comparison` scores the hierarchical model on held-out rounds (its files: :func:`ibo_pymc.population.hierarchical_files.write_hierarchical`).
"""

from __future__ import annotations

import pandas as pd

from ibo_pymc.population.evidence import evidence_table
from ibo_pymc.population.selection import cohort_bms


def variant_labels(models) -> dict:
    """Display names of the hotspot models (u, ũ, ũ±) for the BMS figure."""
    from ibo_pymc.tasks.hotspot.forward.variants import get_variant

    labels = {}
    for m in models:
        try:
            labels[m] = get_variant(m).label
        except Exception:  # a model that is not one of the variants keeps its name
            labels[m] = m
    return labels


def heldout_comparison(h_train, train_fits, tests) -> pd.DataFrame:
    """Held-out lppd of each subject's test rounds under its fit alone and under the hierarchical model fitted
    to the training rounds (``h_train``; ``train_fits`` the subjects' own fits to those rounds)."""
    from ibo_pymc.tasks.hotspot.compare import heldout_lppd

    rows = []
    for fit in train_fits:
        s = int(fit.obs.subject)
        test = tests[s]
        rows.append({"subject": s, "test_rounds": int(test.n_rounds),
                     "independent": heldout_lppd(fit.idata, test, tables=fit.tables),
                     "hierarchical": heldout_lppd(h_train.subject_idata(s), test, tables=fit.tables)})
    df = pd.DataFrame(rows)
    df["difference"] = df["hierarchical"] - df["independent"]
    return df


def run_cohort(data, subjects, fits_folder, *, models=None, config=None, executor=None, log=None, **kwargs):
    """Fit (or reuse the saved fits of) every subject under every model in ``fits_folder``, then
    :func:`cohort_bms` of their evidences. Returns ``(CohortBMS or None, failures)``: with any failed fit the
    comparison is not run (a subject's evidence must be there for every model)."""
    from ibo_pymc.tasks.hotspot.forward.variants import MODELS
    from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

    fits = fit_cohort(cohort_jobs(data, subjects, models or MODELS, config), fits_folder, executor=executor, log=log)
    if fits.failures:
        return None, fits.failures
    return cohort_bms(evidence_table(fits.paths, MODELS), **kwargs), []
