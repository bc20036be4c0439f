"""``ibo-simulate``: the coverage study of the paper's appendix C, and SBC of the sampled model."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ibo_pymc.cli._common import ArgumentParser, check_suffix, positive_int, run, seed_int
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

    for name, what in (("table3", "Table 3 (truth in the inference class)"), ("table4", "Table 4 (generating family omitted)")):
        t = sub.add_parser(name, help=f"all 27 cells of {what}")
        t.add_argument("--reps", type=positive_int, default=1000, help="replicates per cell (default 1000)")
        t.add_argument("--out", metavar="DIR", default="ibo-results", help="output folder (default ./ibo-results)")

    s = sub.add_parser("sbc", help="simulation-based calibration of the sampled model")
    s.add_argument("--model", choices=("u", "tau", "tau_pm"), default="tau_pm")
    s.add_argument("--reps", type=positive_int, default=200, help="replicates (default 200)")
    s.add_argument("--n-obs", type=positive_int, default=60, help="rounds per replicate (default 60)")
    s.add_argument("--out", metavar="DIR", default="ibo-results", help="output folder (default ./ibo-results)")

    d = sub.add_parser("demo", help="write the simulated demo cohort (logs in the study's format plus truth.csv)")
    d.add_argument("--out", metavar="DIR", default=None,
                   help="output folder (default: the per-user cache folder that --data demo reads)")

    for q in (c, *[sub.choices[n] for n in ("table3", "table4")], s):
        q.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0)")
        q.add_argument("--workers", type=positive_int, default=2, help="parallel processes (default 2)")
        q.add_argument("--quiet", action="store_true", help="no progress output")
    for q in (c, *[sub.choices[n] for n in ("table3", "table4")]):
        q.add_argument("--region", choices=("joint", "marginal"), default="joint",
                       help="credible region: highest-mass (family, parameter, gamma) cells (default; what reproduces "
                       "appendix C) or the set of acquisition functions with gamma summed out")
        q.add_argument("--preset", choices=("published", "corrected"), default="corrected",
                       help="argmax tables: corrected (true EI curves; default, what appendix C evidently used: its "
                       "Table 4 never finds EI for PI(1) data, impossible when EI curves are PI curves) or published "
                       "(the EI = PI tables behind Tables 1-2)")
    return p


def _progress(quiet: bool, label: str):
    if quiet:
        return None
    t0 = time.perf_counter()

    def show(done, total):
        print(f"\r{label}: {done}/{total} replicates, {time.perf_counter() - t0:.0f} s", end="" if done < total else "\n",
              file=sys.stderr, flush=True)

    return show


def _main(argv: Sequence[str] | None) -> int:
    from ibo_pymc.io import write_csv

    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from ibo_pymc.data.fetch import demo_dir
        from ibo_pymc.simulate.task import (
            DEMO_ROUNDS,
            DEMO_TRUTHS,
            ensure_demo,
            write_demo,
        )

        if args.out is None:
            out = ensure_demo(demo_dir())
        else:
            write_demo(args.out)
            out = args.out
        print(f"{len(DEMO_TRUTHS)} simulated players, {DEMO_ROUNDS} rounds each, and truth.csv are in {out}")
        return 0
    if args.command == "coverage":
        from ibo_pymc.simulate.coverage import coverage

        check_suffix(args.csv, "--csv", (".csv",))
        try:
            cell = coverage(args.family, args.param, args.n_obs, args.reps, seed=args.seed, omit=args.omit,
                            workers=args.workers, preset=args.preset, region=args.region,
                            progress=_progress(args.quiet, "coverage"))
        except ValueError as exc:
            raise InputError(str(exc), field="--param") from None
        for k in cell.hits:
            what = "true function in the 95% set" if k == "truth" else f"some {k} function in the 95% set"
            print(f"{args.family}({args.param:g}), n_obs={args.n_obs}{' (family omitted)' if args.omit else ''}: "
                  f"{what}: {cell.rate(k):.3f} ± {cell.mcse(k):.3f} (MC se, {cell.reps} replicates)")
        if args.csv:
            write_csv(pd.DataFrame(cell.rows()), args.csv, float_format="%.6g")
        return 0
    if args.command in ("table3", "table4"):
        from ibo_pymc.simulate.coverage import paper_table

        omit = args.command == "table4"
        t0 = time.perf_counter()

        def show(cell):
            if not args.quiet:
                print(f"{cell.family}({cell.param:g}) n_obs={cell.n_obs}: "
                      + ", ".join(f"{k} {cell.rate(k):.3f}" for k in cell.hits) + f"  [{time.perf_counter() - t0:.0f} s]",
                      file=sys.stderr, flush=True)

        table = paper_table(args.reps, omit=omit, seed=args.seed, workers=args.workers, preset=args.preset,
                            region=args.region, progress=show)
        out = Path(args.out)
        write_csv(table, out / f"{args.command}.csv", float_format="%.6g")
        wide = table.pivot_table(index=["family", "param", "covered"], columns="n_obs", values="coverage", sort=False)
        print(wide.to_string(float_format=lambda v: f"{v:.3f}"))
        print(f"wrote {out / (args.command + '.csv')} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        return 0
    # sbc
    import matplotlib

    from ibo_pymc.fit_plots import save_figure
    from ibo_pymc.simulate.sbc import plot_ranks, run_sbc, uniformity

    matplotlib.use("Agg")
    ranks = run_sbc(args.model, args.reps, seed=args.seed, workers=args.workers, n_obs=args.n_obs,
                    progress=_progress(args.quiet, "sbc"))
    test = uniformity(ranks)
    out = Path(args.out)
    write_csv(ranks, out / f"sbc-{args.model}-ranks.csv")
    write_csv(test.reset_index(), out / f"sbc-{args.model}-uniformity.csv", float_format="%.6g")
    save_figure(plot_ranks(ranks), out / f"sbc-{args.model}.png")
    print(test.to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"wrote sbc-{args.model}-ranks.csv, sbc-{args.model}-uniformity.csv, sbc-{args.model}.png to {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-simulate")


if __name__ == "__main__":
    sys.exit(main())
