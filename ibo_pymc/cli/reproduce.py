"""``ibo-reproduce``: the paper's Tables 1 and 2 from the raw logs with the grid engine."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_task_option,
    executor,
    load_subjects,
    load_task_subjects,
    run,
    seed_int,
    subject_arg,
)
from ibo_pymc.errors import InputError
from ibo_pymc.io import check_writable, write_csv
from ibo_pymc.tasks.hotspot.data import load_split, paper_split, random_split
from ibo_pymc.tasks.hotspot.data.splits import split_frame
from ibo_pymc.tasks.hotspot.paper_grid.engine import PaperGridConfig
from ibo_pymc.tasks.hotspot.paper_grid.reproduce import reproduce


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-reproduce",
        description="Reproduce a study's published fits. hotspot (default): fit u, ũ and ũ± to every subject with "
        "the paper's grid method and write Tables 1 and 2. gridsearch: the published maximum-likelihood "
        "leave-one-round-out fits of GP-UCB and BMT-UCB per participant and context, written to fits.csv "
        "(participant,context,model,nLL,R2,lambda,beta,tau,error_variance) and folds.csv.",
    )
    add_task_option(p)
    add_data_option(p)
    p.add_argument("--subject", type=subject_arg, default="all", metavar="N,N,...|all",
                   help="the subjects (participants: the study's id) to fit, numbers separated by commas; default all")
    p.task_option("--split", tasks={"hotspot": "paper"}, metavar="paper|random|FILE",
                  help="hotspot: the train/test split of every subject's rounds: 'paper' (default: the paper's "
                  "80/20 split, shipped with the package), 'random' (a seeded random 80/20 split, see --seed) or a "
                  "split file (subject,session_id,set)")
    p.task_option("--seed", tasks={"hotspot": None}, type=seed_int,
                  help="hotspot: seed of --split random (default 0)")
    p.add_argument("--out", metavar="DIR", default="ibo-results", help="output folder (default: ./ibo-results)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    add_execution_options(p)
    return p


def _reproduce_task(args) -> int:
    from contextlib import ExitStack

    from ibo_pymc.io import atomic_path, check_writable

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", path=out, field="--out")
    task, table, subjects = load_task_subjects(args)
    check_writable(out)  # the input is good: fail now, not after an 11-minute run
    with executor(args) as ex:
        fits, folds = task.reproduce(table, subjects=subjects, executor=ex)
    with ExitStack() as stack:  # both files or neither
        tmp = {n: stack.enter_context(atomic_path(out / n)) for n in ("folds.csv", "fits.csv")}
        folds.to_csv(tmp["folds.csv"], index=False, float_format="%.10g")
        fits.to_csv(tmp["fits.csv"], index=False, float_format="%.10g")
    means = fits.groupby(["context", "model"])["R2"].mean().unstack()
    with pd.option_context("display.width", 140):
        print("mean R2 (leave-one-round-out) by context and model")
        print(means.to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"\nwrote fits.csv, folds.csv to {out}", file=sys.stderr)
    return 0


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.task != "hotspot":
        return _reproduce_task(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", path=out, field="--out")
    if args.seed is not None and args.split != "random":
        raise InputError("--seed seeds a random split; it applies to --split random only", field="--seed")
    data, subjects = load_subjects(args)
    if args.split == "paper":
        split, which = paper_split(data), "the paper's 80/20 split"
    elif args.split == "random":
        seed = args.seed or 0
        split, which = random_split(data, seed=seed), f"a random 80/20 split (seed {seed}; written to split.csv)"
    else:
        split, which = load_split(args.split, data), f"the split of {args.split}"
    check_writable(out)  # the input is good: fail now, not after the fits
    if not args.quiet:
        print(f"train/test split: {which}", file=sys.stderr, flush=True)
    with executor(args) as ex:
        res = reproduce(data, split, config=PaperGridConfig(), subjects=subjects, executor=ex)
    out = Path(args.out)
    write_csv(res.fits, out / "fits.csv", float_format="%.6g")
    write_csv(res.table1, out / "table1.csv", float_format="%.2f")
    write_csv(res.table2, out / "table2.csv", float_format="%.6g")
    if args.split == "random":
        write_csv(split_frame(split, data), out / "split.csv")
    def fmt(v):
        return f"{v:.2f}"

    with pd.option_context("display.width", 140, "display.max_rows", 100):
        print(f"Table 1: out-of-sample log-likelihood ({which})")
        print(res.table1.to_string(index=False, float_format=fmt))
        print("\nTable 2: MAP estimates of the ũ± model and task performance")
        print(res.table2.to_string(index=False, float_format=fmt))
    print(f"\nwrote fits.csv, table1.csv, table2.csv to {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-reproduce")


if __name__ == "__main__":
    sys.exit(main())
