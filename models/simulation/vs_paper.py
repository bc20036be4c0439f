"""Set a Table 3 / Table 4 CSV from ``ibo-simulate table3|table4`` next to the paper's appendix C.

    python models/simulation/vs_paper.py models/simulation/table3.csv > models/simulation/table3_vs_paper.txt
    python models/simulation/vs_paper.py models/simulation/table4.csv > models/simulation/table4_vs_paper.txt

The published values live in ``tests/paper_values.py`` (they never enter the
library). ``z`` is the difference in units of our Monte-Carlo standard error;
the paper's own values carry a Monte-Carlo error of about 0.007 (at 0.95) to
0.016 (at 0.5) with 1000 replicates, plus their rounding to 2 decimals.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from paper_values import TABLE3, TABLE4

N_OBS = (10, 100, 1000)


def paper_value(row) -> float:
    key = (row.family, float(row.param))
    if row.covered == "truth":
        return TABLE3[(*key, int(row.n_obs))]
    return TABLE4[key][row.covered][N_OBS.index(int(row.n_obs))]


def main(path: str) -> None:
    df = pd.read_csv(path)
    df["paper"] = [paper_value(r) for r in df.itertuples()]
    df["diff"] = df["coverage"] - df["paper"]
    # paper values are rounded to 0.01: a difference within rounding counts as none
    df["z"] = np.sign(df["diff"]) * np.maximum(np.abs(df["diff"]) - 0.005, 0) / df["mcse"]
    cols = ["family", "param", "n_obs"] + ([] if (df["covered"] == "truth").all() else ["covered"])
    print(df[cols + ["coverage", "mcse", "paper", "diff", "z"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    # the combined Monte-Carlo error of the difference: ours and the paper's (both 1000 replicates)
    se = np.sqrt(df["mcse"] ** 2 + np.maximum(df["paper"] * (1 - df["paper"]), 1 / 1000) / 1000)
    ok = np.abs(df["diff"]) <= 2 * se + 0.005
    print(f"\ncells: {len(df)}; within 2 combined MC se (+0.005 rounding): {int(ok.sum())}; "
          f"|diff| <= 0.03: {int((np.abs(df['diff']) <= 0.03).sum())}; |diff| <= 0.05: {int((np.abs(df['diff']) <= 0.05).sum())}")
    for n in N_OBS:
        sub = df[df["n_obs"] == n]
        print(f"  n_obs = {n:>4}: within 2 se {int(ok[sub.index].sum())} of {len(sub)}, "
              f"max |diff| {np.abs(sub['diff']).max():.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
