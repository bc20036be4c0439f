"""Check saved fits against the fine-grid posterior (issue 5's acceptance check).

    python benchmarks/validate_fits.py FOLDER [--csv models/sampling/fine_grid_validation.csv]

FOLDER holds fits written by ``ibo-sample --subject all --model M --out FOLDER``
(files ``subject-NN-M.nc``). For each fit this computes the fine-grid
posterior of the continuous model (:mod:`ibo_pymc.tasks.hotspot.model.fine_grid`) and compares:
family probabilities within 0.02; posterior means of gamma, w and tau /
tau^-, tau^+ within 3 Monte-Carlo standard errors plus one final grid cell.
It prints one line per fit and a total, and writes every comparison row.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()

    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks.hotspot.model.fine_grid import compare_fit, fine_grid_posterior
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    # the fits of all rounds (ibo-compare also writes subject-NN-MODEL-train.nc: not these)
    files = sorted(p for p in args.folder.glob("subject-*-*.nc") if not p.stem.endswith("-train"))
    if not files:
        print(f"{args.folder}: no fits (subject-NN-MODEL.nc) found", file=sys.stderr)
        return 2
    rows = []
    t0 = time.perf_counter()
    for path in files:
        m = IBOModel.load(path)
        fine = fine_grid_posterior(m.sd)
        df = compare_fit(m.idata, fine).reset_index()
        df.insert(0, "model", m.config.model)
        df.insert(0, "file", path.name)
        df.insert(0, "subject", m.obs.subject)
        rows.append(df)
        worst = (df["difference"].abs() / df["tolerance"]).max()
        bad = ", ".join(df.loc[~df["ok"], "quantity"])
        print(
            f"subject {m.obs.subject:2d} {m.config.model:6s}  worst |diff|/tolerance {worst:.2f}"
            + (f"  FAIL: {bad}" if bad else ""),
            flush=True,
        )
    out = pd.concat(rows, ignore_index=True)
    n_fail = int((~out.groupby(["subject", "model"])["ok"].all()).sum())
    prob = out[out["quantity"].str.startswith("P(")]
    print(
        f"{len(files)} fits, {n_fail} with a check outside tolerance; "
        f"max |P difference| {prob['difference'].abs().max():.4f}; {time.perf_counter() - t0:.0f} s"
    )
    if args.csv:
        write_csv(out, args.csv, float_format="%.6g")
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
