"""``ibo-simulate``: the coverage study of the paper's appendix C (hotspot), SBC of any task's model, recovery
(gridsearch)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_task_option,
    check_suffix,
    executor,
    positive_int,
    run,
    seed_int,
)
from ibo_pymc.errors import InputError


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="ibo-simulate", description="Simulation studies: coverage (paper Tables 3-4) and SBC.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)

    c = sub.add_parser("coverage", help="coverage of one cell: 95%% credible sets of the grid method over replicates")
    c.add_argument("--family", choices=("PI", "EI", "UCB"), required=True)
    c.add_argument("--param", type=float, required=True, help="xi (PI, EI) or p (UCB) of the generating function")
    c.add_argument("--n-obs", type=positive_int, required=True, help="rounds per replicate")
    c.add_argument("--reps", type=positive_int, default=1000, help="replicates (default 1000)")
    c.add_argument("--omit", action="store_true", help="leave the generating family out of the inference (Table 4)")
    c.add_argument("--csv", metavar="FILE", default=None, help="also write the row(s) here")

    for name, what in (
        ("table3", "Table 3 (truth in the inference class)"),
        ("table4", "Table 4 (generating family omitted)"),
    ):
        t = sub.add_parser(name, help=f"all 27 cells of {what}")
        t.add_argument("--reps", type=positive_int, default=1000, help="replicates per cell (default 1000)")
        t.add_argument("--out", metavar="DIR", default="ibo-results", help="output folder (default ./ibo-results)")

    s = sub.add_parser("sbc", help="simulation-based calibration of the sampled model")
    add_task_option(s)
    s.task_option(
        "--model",
        tasks={"hotspot": "tau_pm"},
        choices=("u", "tau", "tau_pm"),
        help="hotspot: u, tau (ũ) or tau_pm (ũ±; default)",
    )
    s.task_option(
        "--n-obs", tasks={"hotspot": 60}, type=positive_int, help="hotspot: rounds per replicate (default 60)"
    )
    s.task_option(
        "--surrogate", tasks={"gridsearch": "GP"}, choices=("GP", "BMT"), help="gridsearch: the surrogate (default GP)"
    )
    s.task_option(
        "--data",
        tasks={"gridsearch": None},
        metavar="DIR",
        help="gridsearch: the study's folder, whose reward environments the simulated participants search "
        "(default: IBO_DATA_DIR, else the cache, fetched when missing)",
    )
    s.add_argument("--reps", type=positive_int, default=200, help="replicates (default 200)")
    s.add_argument("--out", metavar="DIR", default="ibo-results", help="output folder (default ./ibo-results)")

    v = sub.add_parser("recovery", help="gridsearch: parameter and family recovery of simulated participants")
    add_task_option(v, supported=("gridsearch",))
    v.add_argument("--n", type=positive_int, default=20, help="simulated participants (default 20)")
    add_data_option(v)
    v.add_argument("--draws", type=positive_int, default=1000, help="kept draws per chain (default 1000)")
    v.add_argument("--tune", type=positive_int, default=500, help="tuning iterations per chain (default 500)")
    v.add_argument("--csv", metavar="FILE", default=None, help="also write one row per participant here")
    v.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0)")
    v.add_argument("--quiet", action="store_true", help="no progress output")
    add_execution_options(v)

    d = sub.add_parser("demo", help="write the simulated demo cohort (logs in the study's format plus truth.csv)")
    d.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="output folder (default: the per-user cache folder that --data demo reads)",
    )

    for q in (c, *[sub.choices[n] for n in ("table3", "table4")], d):
        add_task_option(q, supported=("hotspot",))
    for q in (c, *[sub.choices[n] for n in ("table3", "table4")], s):
        q.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0)")
        q.add_argument("--quiet", action="store_true", help="no progress output")
        add_execution_options(q)
    for q in (c, *[sub.choices[n] for n in ("table3", "table4")]):
        q.add_argument(
            "--protocol",
            choices=("reference", "text"),
            default="reference",
            help="reference (default): what produced Table 3's saved replicates (truths at grid nodes, UCB "
            "p = 0.745; gamma the grid node nearest 0.25, 0.2555; covered when the truth lies in its "
            "family's parameter range within the joint 95%% set); text: appendix C as printed (truths as "
            "printed, gamma 0.25, covered when the truth's own cell is in the set)",
        )
        q.add_argument(
            "--gamma",
            type=gamma_arg,
            default=None,
            help="generating scale: a number > 0, or 'study' for the reference scripts' formula (the "
            "gamma-grid node nearest the mean of the u fits' MAP gammas rounded to 2 decimals; u fits of "
            "--data on the training rounds of --split); default: the protocol's",
        )
        q.add_argument(
            "--rule",
            choices=("range", "cell"),
            default=None,
            help="coverage rule, overriding the protocol's: range (truth within its family's parameter range "
            "in the set) or cell (the truth's own node in the set)",
        )
        q.add_argument(
            "--region",
            choices=("joint", "marginal"),
            default="joint",
            help="credible set: highest-mass (family, parameter, gamma) cells (default; what the paper did) "
            "or the set of acquisition functions with gamma summed out",
        )
        add_data_option(q)
        q.add_argument(
            "--split",
            metavar="FILE",
            default=None,
            help="with --gamma study: the split whose training rounds are fitted (the paper's: "
            "paper_splits.csv); default: a seeded random 80/20 split",
        )
    return p


def gamma_arg(text: str):
    if text == "study":
        return text
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'study', got {text!r}")
    return v


def _gamma(args, task) -> float:
    """--gamma, or the protocol's default."""
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    return task.coverage_gamma(args.protocol, args.gamma, data=args.data, split=args.split, log=log)


def _main(argv: Sequence[str] | None) -> int:
    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks import get_task

    args = build_parser().parse_args(argv)
    if args.command == "recovery":
        check_suffix(args.csv, "--csv", (".csv",))
        with executor(args) as ex:
            table, report = get_task(args.task).recovery(
                args.data, args.n, args.seed, executor=ex, draws=args.draws, tune=args.tune
            )
        print(report)
        if args.csv:
            write_csv(table, args.csv, float_format="%.6g")
            print(f"wrote {args.csv}", file=sys.stderr)
        return 0
    task = get_task(args.task)
    if args.command == "demo":
        print(task.demo(args.out))
        return 0
    if args.command == "coverage":
        check_suffix(args.csv, "--csv", (".csv",))
        gamma = _gamma(args, task)
        try:  # the one ValueError left after argparse: the parameter outside its family's range
            with executor(args) as ex:
                cell = task.coverage(
                    args.family,
                    args.param,
                    args.n_obs,
                    args.reps,
                    gamma=gamma,
                    seed=args.seed,
                    omit=args.omit,
                    executor=ex,
                    protocol=args.protocol,
                    rule=args.rule,
                    region=args.region,
                )
        except ValueError as exc:
            raise InputError(str(exc), field="--param") from None
        for k in cell.hits:
            what = {"truth": "true function covered by the 95% set", "gamma": f"gamma = {cell.gamma:.4f} covered"}.get(
                k, f"some {k} function in the 95% set"
            )
            print(
                f"{args.family}({args.param:g}), n_obs={args.n_obs}{' (family omitted)' if args.omit else ''}: "
                f"{what}: {cell.rate(k):.3f} ± {cell.mcse(k):.3f} (MC se, {cell.reps} replicates)"
            )
        if args.csv:
            write_csv(pd.DataFrame(cell.rows()), args.csv, float_format="%.6g")
        return 0
    if args.command in ("table3", "table4"):
        omit = args.command == "table4"
        t0 = time.perf_counter()

        def show(cell):
            if not args.quiet:
                print(
                    f"{cell.family}({cell.param:g}) n_obs={cell.n_obs}: "
                    + ", ".join(f"{k} {cell.rate(k):.3f}" for k in cell.hits)
                    + f"  [{time.perf_counter() - t0:.0f} s]",
                    file=sys.stderr,
                    flush=True,
                )

        gamma = _gamma(args, task)
        with executor(args) as ex:
            table = task.coverage_table(
                args.reps,
                gamma=gamma,
                protocol=args.protocol,
                omit=omit,
                seed=args.seed,
                executor=ex,
                rule=args.rule,
                region=args.region,
                on_cell=show,
                progress=lambda p: None,
            )
        out = Path(args.out)
        write_csv(table, out / f"{args.command}.csv", float_format="%.6g")
        wide = table.pivot_table(index=["family", "param", "covered"], columns="n_obs", values="coverage", sort=False)
        print(wide.to_string(float_format=lambda v: f"{v:.3f}"))
        print(f"wrote {out / (args.command + '.csv')} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        return 0
    # sbc, through the task
    import matplotlib

    from ibo_pymc.engine.calibration import plot_ranks, uniformity
    from ibo_pymc.io import check_writable, save_figure

    matplotlib.use("Agg")
    options = {"model": args.model, "n_obs": args.n_obs} if args.task == "hotspot" else {"surrogate": args.surrogate}
    label = args.model if args.task == "hotspot" else f"{args.task}-{args.surrogate}"
    out = Path(args.out)
    check_writable(out)
    with executor(args) as ex:
        ranks = task.sbc(args.data, args.reps, seed=args.seed, executor=ex, **options)
    test = uniformity(ranks)
    write_csv(ranks, out / f"sbc-{label}-ranks.csv")
    write_csv(test.reset_index(), out / f"sbc-{label}-uniformity.csv", float_format="%.6g")
    save_figure(plot_ranks(ranks), out / f"sbc-{label}.png")
    print(test.to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"wrote sbc-{label}-ranks.csv, sbc-{label}-uniformity.csv, sbc-{label}.png to {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-simulate")


if __name__ == "__main__":
    sys.exit(main())
