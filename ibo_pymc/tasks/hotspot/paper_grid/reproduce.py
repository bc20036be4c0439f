"""Reproducing the paper's Tables 1 and 2 with the grid engine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ibo_pymc.execution.runner import Job, run_jobs
from ibo_pymc.tasks.hotspot.data.rounds import HotspotData, SubjectObservations
from ibo_pymc.tasks.hotspot.data.splits import Split
from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
from ibo_pymc.tasks.hotspot.forward.variants import MODELS, get_variant
from ibo_pymc.tasks.hotspot.paper_grid.engine import PaperGridConfig, fit_paper_grid

FITS_COLUMNS = ["model", "subject", "family", "param", "tau", "tau_neg", "tau_pos", "gamma", "w_em", "oos_loglik"]
TABLE1_COLUMNS = ["subject", "u", "tau", "tau_pm"]
TABLE2_COLUMNS = [
    "subject",
    "family",
    "param",
    "tau_neg",
    "tau_pos",
    "gamma",
    "w_em",
    "mean_dr2",
    "mean_dr3",
    "mean_total",
]


@dataclass(frozen=True)
class Reproduction:
    fits: pd.DataFrame
    table1: pd.DataFrame
    table2: pd.DataFrame


def fit_subject(
    train: SubjectObservations, test: SubjectObservations, config: PaperGridConfig | None = None
) -> list[dict]:
    """Fit u, ũ and ũ± to one subject's training rounds; score the test rounds."""
    config = config or PaperGridConfig()
    tables = load_tables(config.tables)
    rows = []
    for model in MODELS:
        fit = fit_paper_grid(train.delta_r1, train.theta2, model, config=config, tables=tables, subject=train.subject)
        m = fit.map
        variant = get_variant(model)
        tau = np.nan if variant.split_by_sign else m["tau_pos"] if variant.augmented else 0.0
        rows.append(
            {
                "model": model,
                "subject": train.subject,
                "family": m["family"],
                "param": m["param"],
                "tau": tau,
                "tau_neg": m["tau_neg"],
                "tau_pos": m["tau_pos"],
                "gamma": m["gamma"],
                "w_em": fit.w_em,
                "oos_loglik": fit.oos_loglik(test.delta_r1, test.theta2) if test.n_rounds else 0.0,
            }
        )
    return rows


def reproduce(
    data: HotspotData,
    split: Split,
    *,
    config: PaperGridConfig | None = None,
    subjects: list[int] | None = None,
    executor=None,
    progress=None,
) -> Reproduction:
    """Fit the three models to every subject's training rounds and build Tables 1 and 2.

    One task per subject (:mod:`ibo_pymc.execution`; ``executor`` None runs them here).
    """
    config = config or PaperGridConfig()
    subjects = subjects or data.subjects
    tasks = []
    for s in subjects:
        train, test = split.partition(data.observations(s))
        tasks.append(Job(f"subject {s}", fit_subject, (train, test, config)))
    load_tables(config.tables)  # build / cache once, before any worker needs them
    out = run_jobs(tasks, executor, label="grid fits", progress=progress).raise_failures()
    rows = [r for rs in out.results for r in rs]
    fits = pd.DataFrame(rows, columns=FITS_COLUMNS)
    t1 = fits.pivot(index="subject", columns="model", values="oos_loglik")[list(MODELS)].reset_index()
    t1.columns.name = None
    total = pd.DataFrame([{"subject": "total", **{m: round(float(t1[m].sum()), 2) for m in MODELS}}])
    table1 = pd.concat([t1.astype({"subject": object}), total], ignore_index=True)[TABLE1_COLUMNS]
    pm = fits[fits["model"] == "tau_pm"].drop(columns=["model", "tau", "oos_loglik"])
    table2 = pm.merge(data.summary().drop(columns=["user_id", "n_rounds"]), on="subject")[TABLE2_COLUMNS]
    return Reproduction(fits=fits, table1=table1, table2=table2.reset_index(drop=True))
