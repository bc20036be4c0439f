"""``ibo-compare``: PSIS-LOO and held-out comparison of u, ũ and ũ± per subject and for the cohort."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pandas as pd

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_fit_options,
    add_task_option,
    check_suffix,
    executor,
    fit_config,
    fit_settings,
    load_subjects,
    load_task_subjects,
    plural,
    report_failures,
    run,
    subject_arg,
)
from ibo_pymc.tasks.hotspot.data import load_split, random_split


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-compare",
        description="Compare u, ũ and ũ± by leave-one-round-out elpd (PSIS per mixture component, moment "
        "matching, exact refits of the rounds still at Pareto k > 0.7; arviz.compare) and by the held-out log "
        "predictive density of the test rounds after fitting the training rounds. Saved fits are reused.",
    )
    add_task_option(p)
    p.add_argument("--subject", type=subject_arg, required=True,
                   help="subject number (hotspot: 1..28; gridsearch: the participant's id), numbers separated by "
                   "commas, or 'all'")
    p.task_option("--context", tasks={"gridsearch": "spatial"}, choices=("spatial", "conceptual"),
                  help="gridsearch: which version of the task (default spatial); the GP is compared with the "
                   "Bayesian mean tracker by reliable LOO over rounds, families marginalised")
    add_data_option(p)
    p.task_option("--split", tasks={"hotspot": None}, metavar="FILE",
                  help="hotspot: split file (subject,session_id,set) for the held-out column; default: a seeded random "
                  "80/20 split")
    p.task_option("--no-holdout", tasks={"hotspot": False}, action="store_true",
                  help="hotspot: skip the held-out fits (holdout_lppd left empty)")
    p.task_option("--no-refit", tasks={"hotspot": False}, action="store_true",
                  help="hotspot: stop after PSIS and moment matching: do not refit the rounds whose Pareto k still exceeds 0.7 "
                        "(faster, less reliable)")
    p.add_argument("--csv", metavar="FILE", default=None, help="write the rows here")
    p.task_option("--plot", tasks={"hotspot": None}, metavar="FILE",
                  help="hotspot: also draw the LOO differences (.png or .pdf)")
    add_fit_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_execution_options(p)
    return p


def _compare_task(args) -> int:
    from pathlib import Path

    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.io import write_csv

    task, table, subjects = load_task_subjects(args)
    folder = Path(args.fits).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    settings = fit_settings(args)
    jobs = [Job(f"participant {s}, {args.context}", task.compare,
                (task.observations(table, s, context=args.context), str(folder)), settings) for s in subjects]
    with executor(args) as ex:
        out = run_jobs(jobs, ex, label="comparisons")
    status = report_failures(out.failures, "ibo-compare")
    rows = [r for r in out.results if r is not None]
    if not rows:
        return status or 1
    res = pd.concat(rows, ignore_index=True)
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(res[list(task.compare_columns)].to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if len(subjects) > 1:
        best = res[res["rank"] == 0]["surrogate"].value_counts()
        print("\nbest by reliable LOO: " + ", ".join(f"{s} for {n}" for s, n in best.items())
              + f" of {len(subjects)} participants ({args.context}); summed elpd_loo: "
              + ", ".join(f"{s} {v:.1f}" for s, v in res.groupby("surrogate")["elpd_loo"].sum().items()))
    if args.csv:
        write_csv(res[list(task.compare_columns)], args.csv, float_format="%.6g")
        print(f"wrote {args.csv}", file=sys.stderr)
    return status


def _main(argv: Sequence[str] | None) -> int:
    from pathlib import Path

    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.hotspot.compare import (
        COLUMNS,
        MODELS,
        cohort_totals,
        compare_subject,
    )
    from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

    args = build_parser().parse_args(argv)
    check_suffix(args.csv, "--csv", (".csv",))
    check_suffix(args.plot, "--plot", (".png", ".pdf"))
    if args.task != "hotspot":
        return _compare_task(args)
    data, subjects = load_subjects(args)
    split = None
    if not args.no_holdout:
        split = load_split(args.split, data) if args.split else random_split(data, seed=args.seed)
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    cfg = fit_config(args)
    folder = Path(args.fits).resolve()  # workers on other machines see the same (shared) folder
    with executor(args) as ex:
        # 1. every fit (all rounds, and training rounds with a split), reusing the saved ones
        if log:
            log(f"fitting or loading u, ũ, ũ± for {plural(len(subjects), 'subject')}" + (" (all rounds and training rounds)" if split else ""))
        fits = fit_cohort(cohort_jobs(data, subjects, MODELS, cfg, split=split), folder, executor=ex,
                          log=log)
        status = report_failures(fits.failures, "ibo-compare")
        failed = {j.obs.subject for j, p in zip(fits.jobs, fits.paths) if p is None}
        # 2. one comparison task per subject (PSIS, moment matching, exact refits) on the saved fits
        tasks = [Job(f"subject {s}", compare_subject, (data.observations(s), split, folder),
                      {"config": cfg, "refit": not args.no_refit}) for s in subjects if s not in failed]
        out = run_jobs(tasks, ex, label="comparisons")
    status = report_failures(out.failures, "ibo-compare") or status
    rows = [r for r in out.results if r is not None]
    if not rows:
        return status or 1
    table = pd.concat(rows, ignore_index=True)
    def fmt(v):
        return f"{v:.2f}"

    with pd.option_context("display.width", 140, "display.max_rows", 500):
        print(table[list(COLUMNS)].to_string(index=False, float_format=fmt))
        if len(subjects) > 1:
            print("\ncohort totals (se of the summed elpd_loo; best_by_loo = subjects where the model ranks first)")
            print(cohort_totals(table).to_string(float_format=fmt))
    mm = table[table["n_moment_matched"] > 0]
    if len(mm):
        print(f"\nmoment matching brought Pareto k down in {int(mm['n_moment_matched'].sum())} (component, round) "
              "estimates: " + ", ".join(f"subject {r.subject} {r.model} ({r.n_moment_matched})" for r in mm.itertuples()))
    refit = table[table["n_refit"] > 0]
    if len(refit):
        print(f"\nrounds with Pareto k > 0.7 were refitted exactly ({int(refit['n_refit'].sum())} in all): "
              + ", ".join(f"subject {r.subject} {r.model} ({r.n_refit})" for r in refit.itertuples()))
    high = table[table["max_pareto_k"] > 0.7]
    if len(high):  # only with --no-refit
        print("\nPareto k > 0.7 (PSIS-LOO unreliable for some rounds; see arviz.loo): "
              + ", ".join(f"subject {r.subject} {r.model} ({r.max_pareto_k:.2f})" for r in high.itertuples()))
    if args.csv:
        from ibo_pymc.io import write_csv

        write_csv(table[list(COLUMNS)], args.csv, float_format="%.6g")
        print(f"wrote {args.csv}", file=sys.stderr)
    if args.plot:
        from ibo_pymc.io import save_figure
        from ibo_pymc.tasks.hotspot.fit_plots import plot_loo

        save_figure(plot_loo(table), args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-compare")


if __name__ == "__main__":
    sys.exit(main())
