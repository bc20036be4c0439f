"""``ibo-data``: fetch, verify and tabulate a task's data (the hotspot raw logs; with ``--task gridsearch`` the
cognitivemaps study, or with ``--study gridsearch2018`` Wu et al. 2018's), through the task object."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ibo_pymc.cli._common import ArgumentParser, add_data_option, add_task_option, run
from ibo_pymc.errors import InputError
from ibo_pymc.io import write_csv


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-data",
        description="Fetch, verify and tabulate a task's data: the hotspot study's raw "
        "logs (default) or, with --task gridsearch, the cognitivemaps study (Wu et al. 2020) or, with --study "
        "gridsearch2018, Wu et al. 2018's two experiments.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)

    f = sub.add_parser("fetch", help="download the study's pinned files (SHA-256 checked) into the cache or --dest")
    f.add_argument("--dest", metavar="DIR", default=None, help="target folder (default: the per-user cache)")
    add_task_option(f)
    _add_study_option(f)

    v = sub.add_parser("verify", help="check a folder's files against the pinned SHA-256 hashes")
    add_data_option(v)
    add_task_option(v)
    _add_study_option(v)

    o = sub.add_parser(
        "observations",
        help="the data as one table: hotspot, one row per eligible round "
        "(subject,user_id,session_id,round_index,delta_r1,theta2); gridsearch, one row per choice",
    )
    add_data_option(o)
    add_task_option(o)
    _add_study_option(o)
    o.add_argument("--csv", metavar="FILE", default=None, help="write the table here (default: print it)")

    s = sub.add_parser(
        "summary",
        help="one row per subject: rounds kept and task performance (hotspot: paper "
        "Table 2, cols 6-8; gridsearch: per participant and context)",
    )
    add_data_option(s)
    add_task_option(s)
    _add_study_option(s)
    s.add_argument("--csv", metavar="FILE", default=None, help="also write the table here")
    return p


def _add_study_option(p: ArgumentParser) -> None:
    p.task_option(
        "--study",
        tasks={"gridsearch": None},
        choices=("cognitivemaps", "gridsearch2018"),
        help="gridsearch: the study, cognitivemaps (Wu et al. 2020; default) or gridsearch2018 (Wu et al. 2018); "
        "with --data, the data decide and a study they are not is refused",
    )


def _study(args) -> dict:
    return {} if getattr(args, "study", None) is None else {"study": args.study}


def _main(argv: Sequence[str] | None) -> int:
    from ibo_pymc.tasks import get_task

    args = build_parser().parse_args(argv)
    task = get_task(args.task)
    if args.command == "fetch":
        task.fetch(args.dest, **_study(args))  # its progress line names the folder
        return 0
    if args.command == "verify":
        folder, problems = task.verify(args.data, **_study(args))
        if problems:
            name, what = next(iter(problems.items()))
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise InputError(what + more, path=folder / name)
        print(f"{folder}: all pinned files present and intact")
        return 0
    dataset = task.load(args.data, **_study(args))
    if args.command == "observations":
        table, what = task.observations_table(dataset)
        # 17 significant digits: every float reads back as the same double, so the table's fits are the data's
        if args.csv:
            write_csv(table, args.csv, float_format="%.17g")
            print(f"wrote {what} to {args.csv}", file=sys.stderr)
        else:
            table.to_csv(sys.stdout, index=False, float_format="%.17g")
        return 0
    table, text = task.summary_report(dataset)
    print(text)
    if args.csv:
        write_csv(table, args.csv, float_format="%.10g")
        print(f"wrote {len(table)} rows to {args.csv}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-data")


if __name__ == "__main__":
    sys.exit(main())
