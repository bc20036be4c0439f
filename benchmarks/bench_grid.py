"""Whole-cohort grid reproduction, three models (target: under 10 s on 2 cores).

Baseline: a direct dense evaluation of the same grid (every cell, gamma and
round, as the reference code does) for one EM pass of subject 28's ũ±,
timed in the same run. The authors' R code needs about 2 hours for the cohort.
"""

from __future__ import annotations

import argparse
import os
import time

from _args import positive_int  # beside this script

from ibo_pymc.execution import open_executor
from ibo_pymc.tasks.hotspot.data import load_hotspot, load_split
from ibo_pymc.tasks.hotspot.forward import load_tables
from ibo_pymc.tasks.hotspot.kernel import logpdf as wrapped_cauchy_mixture_logpdf
from ibo_pymc.tasks.hotspot.paper_grid import PaperGridConfig, fit_paper_grid
from ibo_pymc.tasks.hotspot.paper_grid.reproduce import reproduce


def dense_pass(tables, cfg, d, x) -> float:
    """One dense evaluation of every (cell, gamma) of one ũ± half (the straightforward way)."""
    t0 = time.perf_counter()
    curves = tables.at_delta_r1(d).reshape(-1, len(d))
    for g in cfg.gamma:
        wrapped_cauchy_mixture_logpdf(x[None, :], curves, g, 0.5).sum(axis=1)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("IBO_DATA_DIR", "../shared/data/hotspot_raw"))
    ap.add_argument("--split", default="../shared/data/paper_splits.csv")
    ap.add_argument("--workers", type=positive_int, default=2)
    a = ap.parse_args()
    data = load_hotspot(a.data)
    split = load_split(a.split, data)
    cfg = PaperGridConfig()
    tables = load_tables(cfg.tables)
    with open_executor(a.workers) as ex:  # cluster start-up is not timed
        t0 = time.perf_counter()
        res = reproduce(data, split, config=cfg, executor=ex, progress=lambda p: None)
        total = time.perf_counter() - t0
    train, _ = split.partition(data.observations(28))
    t0 = time.perf_counter()
    fit_paper_grid(train.delta_r1, train.theta2, "tau_pm", config=cfg, tables=tables)
    one = time.perf_counter() - t0
    dense = dense_pass(tables, cfg, train.delta_r1, train.theta2)
    print(
        f"cohort, 3 models, {a.workers} workers: {total:.2f} s  (target < 10 s); totals "
        + ", ".join(f"{m} {v:.2f}" for m, v in res.table1.iloc[-1, 1:].items())
    )
    print(f"subject 28 ũ± fit (all EM passes): {one:.3f} s")
    print(f"baseline: one dense pass over the grid for subject 28: {dense:.3f} s")
    print(f"ratio dense single pass / engine whole fit: {dense / one:.1f}x")


if __name__ == "__main__":
    main()
