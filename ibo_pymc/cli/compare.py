"""``ibo-compare``: PSIS-LOO and held-out comparison of u, ũ and ũ± per subject and for the cohort."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_fit_options,
    add_task_option,
    add_where_options,
    check_suffix,
    executor,
    fit_settings,
    load_task_subjects,
    report_failures,
    run,
    subject_arg,
)


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-compare",
        description="Compare u, ũ and ũ± by leave-one-round-out elpd (PSIS per mixture component, moment "
        "matching, exact refits of the rounds still at Pareto k > 0.7; arviz.compare) and by the held-out log "
        "predictive density of the test rounds after fitting the training rounds. Saved fits are reused.",
    )
    add_task_option(p)
    p.add_argument(
        "--subject",
        type=subject_arg,
        required=True,
        help="subject number (hotspot: 1..28; gridsearch: the participant's id), numbers separated by commas, or 'all'",
    )
    add_where_options(
        p,
        context_help="; the GP is compared with the Bayesian mean tracker by reliable LOO over rounds, families "
        "marginalised",
    )
    add_data_option(p)
    p.task_option(
        "--split",
        tasks={"hotspot": None},
        metavar="FILE",
        help="hotspot: split file (subject,session_id,set) for the held-out column; default: a seeded random "
        "80/20 split",
    )
    p.task_option(
        "--no-holdout",
        tasks={"hotspot": False},
        action="store_true",
        help="hotspot: skip the held-out fits (holdout_lppd left empty)",
    )
    p.task_option(
        "--no-refit",
        tasks={"hotspot": False},
        action="store_true",
        help="hotspot: stop after PSIS and moment matching: do not refit the rounds whose Pareto k still exceeds 0.7 "
        "(faster, less reliable)",
    )
    p.add_argument("--csv", metavar="FILE", default=None, help="write the rows here")
    p.task_option(
        "--plot", tasks={"hotspot": None}, metavar="FILE", help="hotspot: also draw the LOO differences (.png or .pdf)"
    )
    add_fit_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_execution_options(p)
    return p


def _main(argv: Sequence[str] | None) -> int:
    from pathlib import Path

    args = build_parser().parse_args(argv)
    check_suffix(args.csv, "--csv", (".csv",))
    check_suffix(args.plot, "--plot", (".png", ".pdf"))
    task, dataset, subjects, where = load_task_subjects(args)
    options = (
        {"split": args.split, "holdout": not args.no_holdout, "refit": not args.no_refit}
        if args.task == "hotspot"
        else where
    )
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    folder = Path(args.fits).resolve()  # workers on other machines see the same (shared) folder
    folder.mkdir(parents=True, exist_ok=True)
    with executor(args) as ex:
        res = task.compare_cohort(dataset, subjects, folder, executor=ex, log=log, **options, **fit_settings(args))
    status = report_failures(res.failures, "ibo-compare")
    if res.table is None:
        return status or 1
    print(res.report)
    if args.csv:
        from ibo_pymc.io import write_csv

        write_csv(res.table[res.columns], args.csv, float_format="%.6g")
        print(f"wrote {args.csv}", file=sys.stderr)
    if args.plot:
        from ibo_pymc.io import save_figure

        save_figure(task.plot_comparison(res.table), args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-compare")


if __name__ == "__main__":
    sys.exit(main())
