"""``ibo-data``: fetch, verify and tabulate a task's data (the hotspot raw logs; with ``--task gridsearch`` the
cognitivemaps study)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pandas as pd

from ibo_pymc.cli._common import ArgumentParser, add_data_option, add_task_option, run
from ibo_pymc.errors import InputError
from ibo_pymc.io import write_csv
from ibo_pymc.tasks.hotspot.data import fetch, verify
from ibo_pymc.tasks.hotspot.datasets import load_data, resolve_data_dir


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="ibo-data", description="Fetch, verify and tabulate a task's data: the hotspot study's raw "
                       "logs (default) or, with --task gridsearch, the cognitivemaps study (Wu et al. 2020).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)

    f = sub.add_parser("fetch", help="download the 56 raw-log files (SHA-256 checked) into the cache or --dest")
    f.add_argument("--dest", metavar="DIR", default=None, help="target folder (default: the per-user cache)")
    add_task_option(f)

    v = sub.add_parser("verify", help="check a folder's files against the pinned SHA-256 hashes")
    add_data_option(v)
    add_task_option(v)

    o = sub.add_parser("observations", help="one row per eligible round: subject,user_id,session_id,round_index,delta_r1,theta2")
    add_data_option(o)
    add_task_option(o)
    o.add_argument("--csv", metavar="FILE", default=None, help="write the table here (default: print it)")

    s = sub.add_parser("summary", help="one row per subject: rounds kept and task performance (paper Table 2, cols 6-8)")
    add_data_option(s)
    add_task_option(s)
    s.add_argument("--csv", metavar="FILE", default=None, help="also write the table here")
    return p


def _data_task(args) -> int:
    """ibo-data for a task other than the hotspot one, through the task object."""
    from ibo_pymc.tasks import get_task

    task = get_task(args.task)
    if args.command == "fetch":
        task.fetch(args.dest)  # its progress line names the folder
        return 0
    if args.command == "verify":
        folder, problems = task.verify(args.data)
        if problems:
            name, what = next(iter(problems.items()))
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise InputError(what + more, path=folder / name)
        print(f"{folder}: all pinned files present and intact")
        return 0
    table = task.load(args.data)
    if args.command == "observations":
        out = table
        what = f"{len(table)} choices of {table['subject'].nunique()} participants"
    else:
        out = task.summary(table)
        with pd.option_context("display.width", 120, "display.max_rows", 500):
            print(out.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        what = f"{len(out)} participant x context rows"
    if args.csv:
        write_csv(out, args.csv, float_format="%.17g")
        print(f"wrote {what} to {args.csv}", file=sys.stderr)
    elif args.command == "observations":
        out.to_csv(sys.stdout, index=False, float_format="%.17g")
    return 0


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.task != "hotspot":
        return _data_task(args)
    if args.command == "fetch":
        fetch(args.dest)  # its progress line names the folder
        return 0
    if args.command == "verify":
        folder = resolve_data_dir(args.data)
        problems = verify(folder)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise InputError(problems[0] + more)
        print(f"{folder}: all 56 files present and intact")
        return 0
    data = load_data(args.data)
    if args.command == "observations":
        table = data.observations_frame()
        # 17 significant digits: every float reads back as the same double, so the table's fits are the logs'
        if args.csv:
            write_csv(table, args.csv, float_format="%.17g")
            print(f"wrote {len(table)} rounds of {table['subject'].nunique()} subjects to {args.csv}", file=sys.stderr)
        else:
            table.to_csv(sys.stdout, index=False, float_format="%.17g")
        return 0
    # summary
    table = data.summary()
    excl = data.exclusion_counts()
    if args.csv:
        write_csv(table, args.csv, float_format="%.10g")
    shown = table.merge(excl[["subject", "logged", "burn_in", "reachable"]], on="subject")
    shown = shown[["subject", "user_id", "logged", "burn_in", "reachable", "n_rounds", "mean_dr2", "mean_dr3", "mean_total"]]
    with pd.option_context("display.width", 120, "display.max_rows", 500):
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(
        f"{len(table)} subjects, {int(excl['logged'].sum())} rounds logged; removed {int(excl['burn_in'].sum())} "
        f"burn-in and {int(excl['reachable'].sum())} reachable-hotspot rounds; {int(table['n_rounds'].sum())} eligible"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-data")


if __name__ == "__main__":
    sys.exit(main())
