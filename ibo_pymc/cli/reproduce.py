"""``ibo-reproduce``: the paper's Tables 1 and 2 from the raw logs with the grid engine."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_experiment_option,
    add_task_option,
    executor,
    load_task_subjects,
    run,
    seed_int,
    subject_arg,
)
from ibo_pymc.errors import InputError
from ibo_pymc.io import atomic_path, check_writable


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-reproduce",
        description="Reproduce a study's published fits. hotspot (default): fit u, ũ and ũ± to every subject with "
        "the paper's grid method and write Tables 1 and 2. gridsearch: the published maximum-likelihood "
        "leave-one-round-out fits of GP-UCB and BMT-UCB per participant and context, written to fits.csv "
        "(participant,context,model,nLL,R2,lambda,beta,tau,error_variance) and folds.csv; with --experiment "
        "(Wu et al. 2018's data), that experiment's 24 models, leaving out each round within its horizon.",
    )
    add_task_option(p)
    add_data_option(p)
    p.add_argument(
        "--subject",
        type=subject_arg,
        default="all",
        metavar="N,N,...|all",
        help="the subjects (participants: the study's id) to fit, numbers separated by commas; default all",
    )
    p.task_option(
        "--split",
        tasks={"hotspot": "paper"},
        metavar="paper|random|FILE",
        help="hotspot: the train/test split of every subject's rounds: 'paper' (default: the paper's "
        "80/20 split, shipped with the package), 'random' (a seeded random 80/20 split, see --seed) or a "
        "split file (subject,session_id,set)",
    )
    add_experiment_option(p)
    p.task_option("--seed", tasks={"hotspot": None}, type=seed_int, help="hotspot: seed of --split random (default 0)")
    p.add_argument("--out", metavar="DIR", default="ibo-results", help="output folder (default: ./ibo-results)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    add_execution_options(p)
    return p


def _main(argv: Sequence[str] | None) -> int:
    from contextlib import ExitStack

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", path=out, field="--out")
    if args.task == "hotspot" and args.seed is not None and args.split != "random":
        raise InputError("--seed seeds a random split; it applies to --split random only", field="--seed")
    task, dataset, subjects, _ = load_task_subjects(args)  # 2020: every context; 2018: the experiment
    options = {"split": args.split, "seed": args.seed} if args.task == "hotspot" else {}
    check_writable(out)  # the input is good: fail now, not after the fits
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    with executor(args) as ex:
        res = task.reproduce(dataset, subjects=subjects, executor=ex, log=log, **options)
    with ExitStack() as stack:  # every file or none
        tmp = {n: stack.enter_context(atomic_path(out / f"{n}.csv")) for n in res.tables}
        for name, table in res.tables.items():
            table.to_csv(tmp[name], index=False, float_format=res.formats[name])
    print(res.report)
    print(f"\nwrote {', '.join(f'{n}.csv' for n in res.tables)} to {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-reproduce")


if __name__ == "__main__":
    sys.exit(main())
