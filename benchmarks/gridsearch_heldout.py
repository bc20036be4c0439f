"""Held-out comparison of the grid task's Bayesian fit with the published maximum-likelihood protocol (issue 20).

    python benchmarks/gridsearch_heldout.py [--participants 1,4,6,7] [--workers 2] [--csv FILE]

For each participant and context: leave-one-round-out over rounds 1-9 with Bayesian fits (each round's
lppd under the posterior of the other eight; all five families, the family marginalised), set beside
the maximum-likelihood held-out nLL of the same protocol for GP-UCB (ours: models/gridsearch/reproduction/
folds.csv; the published one where tests/reference/cognitivemaps has it), and beside PSIS-LOO by round of
the whole-data fit (which approximates the same quantity without refitting).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _args import positive_int, subject_arg  # beside this script

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--participants", type=subject_arg, default="1,4,6,7")
    ap.add_argument("--workers", type=positive_int, default=2)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "cognitivemaps"))
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()

    from ibo_pymc.cli._common import executor
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks.gridsearch.compare import heldout_fold, loo_by_round
    from ibo_pymc.tasks.gridsearch.data import grid_rounds, load, subjects
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, fit

    table = load(args.data)
    ids = subjects(table) if args.participants == "all" else args.participants
    cfg = GridSearchConfig(cores=1)
    tasks = []
    for s in ids:
        for c in ("spatial", "conceptual"):
            gr = grid_rounds(table, s, c)
            tasks += [Job(f"{s} {c} round {k}", heldout_fold, (gr, int(k), cfg)) for k in gr.rounds]
    with executor(argparse.Namespace(workers=args.workers, scheduler=None)) as ex:  # with the progress line
        folds = pd.DataFrame(run_jobs(tasks, ex, label="held-out rounds").raise_failures().results)
    rows = []
    mle = pd.read_csv(REPO / "models" / "gridsearch" / "reproduction" / "folds.csv")
    pub_path = REPO / "tests" / "reference" / "cognitivemaps" / "paramEstimates_ucb.csv"
    pub = pd.read_csv(pub_path) if pub_path.is_file() else None
    for (s, c), g in folds.groupby(["participant", "context"]):
        gr = grid_rounds(table, s, c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loo = loo_by_round(fit(gr, cfg))
        m = mle[(mle.participant == s) & (mle.context == c) & (mle.model == "GP-UCB")]
        row = {
            "participant": s,
            "context": c,
            "bayes_heldout_nlpd": -g["lppd"].sum(),
            "psis_loo_nlpd": -float(loo.elpd_loo),
            "pareto_k_max": float(loo.pareto_k.max()),
            "mle_gp_ucb_nll": m["test_nLL"].sum(),
        }
        if pub is not None:
            p = pub[(pub.participant == s) & (pub.context.str.lower() == c) & (pub.ModelName == "RBF-UCB")]
            row["published_gp_ucb_nll"] = p["roundnLL"].sum() if len(p) == 9 else np.nan
        rows.append(row)
    t = pd.DataFrame(rows)
    with pd.option_context("display.width", 160):
        print(t.round(2).to_string(index=False))
    gap = (t.bayes_heldout_nlpd - t.mle_gp_ucb_nll).mean()
    print(
        f"Bayesian held-out -lppd minus MLE held-out nLL (GP-UCB): mean {gap:.2f} nats "
        f"over {len(t)} participant-contexts (negative: the posterior predicts held-out rounds better)"
    )
    if args.csv:
        write_csv(t, args.csv, float_format="%.6g")
        write_csv(folds, args.csv.with_name(args.csv.stem + "_rounds.csv"), float_format="%.6g")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
