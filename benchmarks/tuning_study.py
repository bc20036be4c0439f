"""How long must NUTS tune for the hotspot fits? The evidence for issue 33's "tuning length set from evidence".

    python benchmarks/tuning_study.py --data ../shared/data/hotspot_raw [--tunes 300,500,1000] [--seeds 0,1,2]
        [--workers 2] [--csv models/sampling/tuning.csv [--update]]

For every tuning length and seed, the study's 84 default fits (28 subjects x u, ũ, ũ±) are made afresh with
``ibo-sample --subject all --model M --tune T --seed S`` (the command as a user runs it, fresh processes, on
``--workers`` local workers) and their convergence tables read. One row per (tune, seed):

* ``converged``: fits meeting the targets (R-hat <= 1.01, bulk and tail ESS >= 400 on every checked quantity)
  within the engine's thinning (up to 8); ``not_converged`` names the others;
* ``thinned`` and ``draw_work``: fits that needed a longer rerun, and the NUTS draws spent in units of one run
  (a fit thinned t-fold ran 1 + 2 + ... + t = 2t - 1 of them; 84 is the floor);
* ``r_hat_max``, ``ess_bulk_min``, ``ess_tail_min``, ``divergences``: over all 84;
* ``max_dp``: the largest difference of a family probability from the fits of the longest tuning with the same
  seed (Monte Carlo error plus any effect of the tuning);
* ``wall_s``: the three commands' wall time, and ``ratio`` = wall time at the longest tuning / this one (same
  seed, same run).

``--update`` adds the rows of this run's seeds to an existing ``--csv`` (replacing the same tune and seed), so a
study can grow seed by seed; each seed's rows, ratio included, still come from one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd
from _args import comma_list, positive_int, seed_int  # beside this script
from bench_engine import REPO, command_wall_time  # the same way of running a command, from this folder

MODELS = ("u", "tau", "tau_pm")


def _fits(data: str, tune: int, seed: int, workers: int, folder: Path, env: dict) -> tuple[pd.DataFrame, float]:
    wall = 0.0
    for m in MODELS:
        wall += command_wall_time(
            REPO,
            "sample",
            [
                "--subject",
                "all",
                "--model",
                m,
                "--tune",
                str(tune),
                "--seed",
                str(seed),
                "--data",
                data,
                "--out",
                str(folder),
                "--workers",
                str(workers),
                "--quiet",
            ],
            env,
        )
    table = pd.concat([pd.read_csv(folder / f"convergence-{m}.csv") for m in MODELS], ignore_index=True)
    return table, wall


def summarise(runs: dict) -> pd.DataFrame:
    """One row per (tune, seed) from ``{(tune, seed): (convergence table, wall seconds)}`` (module docstring)."""
    rows = []
    probs = [c for c in next(iter(runs.values()))[0].columns if c.startswith("p_")]
    for (tune, seed), (t, wall) in sorted(runs.items()):
        ref_tune = max(k[0] for k in runs if k[1] == seed)
        ref, ref_wall = runs[(ref_tune, seed)]
        j = t.merge(ref, on=["subject", "model"], suffixes=("", "_ref"))
        bad = t[~t["converged"].astype(bool)]
        rows.append(
            {
                "tune": tune,
                "seed": seed,
                "fits": len(t),
                "converged": int(t["converged"].astype(bool).sum()),
                "not_converged": " ".join(f"{r.subject}/{r.model}" for r in bad.itertuples()),
                "thinned": int((t["thin"] > 1).sum()),
                "draw_work": int((2 * t["thin"] - 1).sum()),
                "r_hat_max": t["r_hat_max"].max(),
                "ess_bulk_min": t["ess_bulk_min"].min(),
                "ess_tail_min": t["ess_tail_min"].min(),
                "divergences": int(t["divergences"].sum()),
                "max_dp": max((j[p] - j[f"{p}_ref"]).abs().max() for p in probs),
                "wall_s": wall,
                "ratio": ref_wall / wall,
            }
        )
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data/hotspot_raw", help="the hotspot raw-log folder")
    p.add_argument(
        "--tunes",
        type=comma_list(positive_int, "tuning length"),
        default="300,500,1000",
        help="tuning lengths, comma-separated",
    )
    p.add_argument("--seeds", type=comma_list(seed_int, "seed"), default="0,1,2", help="seeds, comma-separated")
    p.add_argument("--workers", type=positive_int, default=2)
    p.add_argument("--csv", help="also write the table here (atomically)")
    p.add_argument(
        "--update",
        action="store_true",
        help="with --csv: keep the file's rows of other (tune, seed) pairs (a study grown seed by seed)",
    )
    args = p.parse_args(argv)
    tunes = sorted(set(args.tunes))
    seeds = args.seeds
    env = dict(os.environ)
    data = str(Path(args.data).resolve())  # the commands run in the repository's folder
    runs = {}
    with tempfile.TemporaryDirectory(prefix="ibo-tuning-") as tmp:
        for seed in seeds:
            for tune in tunes:
                print(f"\rtune {tune}, seed {seed}: 84 fits ...", end="", file=sys.stderr, flush=True)
                runs[(tune, seed)] = _fits(data, tune, seed, args.workers, Path(tmp) / f"t{tune}-s{seed}", env)
    print(file=sys.stderr)
    table = summarise(runs)
    if args.update:
        if not args.csv:
            p.error("--update applies with --csv only")
        if Path(args.csv).is_file():
            old = pd.read_csv(args.csv, keep_default_na=False)
            mine = set(zip(table["tune"], table["seed"]))
            old = old[[(t, s) not in mine for t, s in zip(old["tune"], old["seed"])]]
            table = pd.concat([old, table], ignore_index=True).sort_values(["tune", "seed"], kind="stable")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.csv:
        sys.path.insert(0, str(REPO))
        from ibo_pymc.io import write_csv

        write_csv(table, args.csv, float_format="%.4g")
        print(f"wrote {args.csv}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
