"""Recovery of simulated populations by the hierarchical model (issue 19).

    python benchmarks/hierarchical_recovery.py [--cohorts 12] [--subjects 12] [--rounds 100] [--workers 2] [--csv FILE]
                                               [--resume] [--seeds A-B]

Each cohort: subjects drawn from a known population
(:class:`ibo_pymc.tasks.hotspot.simulate.population.PopulationTruth`,
defaults), each fitted alone (ũ±, 4 chains x 500 draws), then the hierarchical model (4 chains x 500 draws).
Prints the coverage of the 90% intervals of the population quantities over the cohorts, the convergence, and
the subjects' mean absolute error independent vs hierarchical (shrinkage); writes every row to --csv, rewritten
(atomically) after each cohort, so the file always holds the cohorts finished so far, whole, and a run stopped
early keeps them; a progress line is printed per finished cohort. ``--resume`` keeps the cohorts --csv already
holds (a cohort is its seed, so a resumed run is the run that was stopped) and fits only the others.
``--seeds A-B`` fits only those of the --cohorts seeds (inclusive), so the study can be split over processes or
machines, each with its own --csv; the files concatenated (one header) are one file to ``--resume`` from.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from _args import positive_int  # beside this script


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cohorts", type=positive_int, default=12)
    ap.add_argument("--subjects", type=positive_int, default=12)
    ap.add_argument("--rounds", type=positive_int, default=100)
    ap.add_argument("--workers", type=positive_int, default=2)
    ap.add_argument("--csv", type=Path, default=None)
    ap.add_argument("--resume", action="store_true", help="keep the cohorts --csv holds, fit the others")
    ap.add_argument("--seeds", default=None, help="A-B: fit only these of the cohorts' seeds (inclusive)")
    args = ap.parse_args()
    if args.resume and args.csv is None:
        ap.error("--resume needs --csv (the file whose cohorts it keeps)")
    wanted = range(args.cohorts)
    if args.seeds is not None:
        try:
            a, b = (int(v) for v in args.seeds.split("-"))
        except ValueError:
            ap.error(f"--seeds: expected A-B (two whole numbers), got {args.seeds!r}")
        if not 0 <= a <= b < args.cohorts:
            ap.error(f"--seeds: expected 0 <= A <= B < --cohorts ({args.cohorts}), got {args.seeds!r}")
        wanted = range(a, b + 1)

    from ibo_pymc.execution import Job, open_executor, run_jobs
    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks.hotspot.simulate.population import (
        PopulationTruth,
        recovery_replicate,
    )

    truth = PopulationTruth()
    t0 = time.perf_counter()
    finished: dict[int, pd.DataFrame] = {}
    if args.resume and args.csv.exists():
        kept = pd.read_csv(args.csv)
        finished = {int(s): rows.reset_index(drop=True) for s, rows in kept.groupby("seed") if s < args.cohorts}
        print(f"resuming: cohorts {', '.join(map(str, sorted(finished)))} kept from {args.csv}", flush=True)
    seeds = [s for s in wanted if s not in finished]
    tasks = [Job(f"cohort {s}", recovery_replicate, (truth, args.subjects, args.rounds, s)) for s in seeds]

    def keep(i, rows):
        finished[seeds[i]] = rows
        done = sum(k in wanted for k in finished)
        print(f"cohort {seeds[i]} done ({done}/{len(wanted)}, {time.perf_counter() - t0:.0f} s)", flush=True)
        if args.csv:
            rows = pd.concat([finished[k] for k in sorted(finished)], ignore_index=True)
            write_csv(rows, args.csv, float_format="%.6g")

    with open_executor(args.workers) as ex:
        out = run_jobs(tasks, ex, label="cohorts", on_result=keep)
    for f in out.failures:
        print("failed:", f)
    df = pd.concat([finished[k] for k in sorted(finished)], ignore_index=True)
    pop = df[df["quantity"] != "subject_error"]
    cov = pop.groupby(["quantity", "label"], sort=False)["covered"].agg(["mean", "count"])
    print(
        f"{df['seed'].nunique()} cohorts of {args.subjects} subjects x {args.rounds} rounds, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    print("coverage of the 90% intervals:\n" + cov.round(2).to_string())
    print(f"overall {pop['covered'].mean():.3f} over {len(pop)} intervals")
    conv = df.groupby("seed")[
        ["max_rhat", "min_ess", "divergences", "max_pareto_k", "max_pareto_k_max", "refined", "unreliable"]
    ].first()
    print(
        f"convergence (worst over cohorts): R-hat {conv['max_rhat'].max():.3f}, ESS {conv['min_ess'].min():.0f}, "
        f"divergences {conv['divergences'].sum():d}; largest Pareto k {conv['max_pareto_k'].max():.2f} (median over "
        f"population draws), {conv['max_pareto_k_max'].max():.2f} (largest); subjects refined "
        f"{conv['refined'].sum():d}, still unreliable {conv['unreliable'].sum():d}"
    )
    err = df[df["quantity"] == "subject_error"].groupby("label")[["lower", "upper"]].mean()
    err.columns = ["independent", "hierarchical"]
    print("subjects' mean absolute error (posterior mean vs truth):\n" + err.round(4).to_string())
    if args.csv:
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
