"""The hotspot task's population level: model labels and the hierarchical model's held-out scoring.

:func:`variant_labels` names the models in the figure (the cohort's fits and comparisons go through the task
object: :meth:`~ibo_pymc.tasks.hotspot.HotspotTask.cohort_fits` and :func:`ibo_pymc.population.selection.cohort_bms`);
:func:`heldout_comparison` scores the hierarchical model on held-out rounds (its files:
:func:`ibo_pymc.population.hierarchical_files.write_hierarchical`).
"""

from __future__ import annotations

import pandas as pd


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
    to the training rounds (``h_train``; ``train_fits`` the subjects' own fits to those rounds), with what the
    hierarchical numbers rest on: the training model's importance weights of the subject (``pareto_k``, the
    median over population draws, and ``pareto_k_max``), its ``remedy`` and whether they pass (``reliable``)."""
    from ibo_pymc.tasks.hotspot.compare import heldout_lppd

    diag = h_train.idata["subject_diagnostics"]
    rows = []
    for fit in train_fits:
        s = int(fit.obs.subject)
        test = tests[s]
        d = diag.sel(subject=s)
        rows.append(
            {
                "subject": s,
                "test_rounds": int(test.n_rounds),
                "independent": heldout_lppd(fit.idata, test, tables=fit.tables),
                "hierarchical": heldout_lppd(h_train.subject_idata(s), test, tables=fit.tables),
                **{k: d[k].item() for k in ("pareto_k", "pareto_k_max", "remedy", "reliable") if k in d},
            }
        )
    df = pd.DataFrame(rows)
    df.insert(4, "difference", df["hierarchical"] - df["independent"])
    return df
