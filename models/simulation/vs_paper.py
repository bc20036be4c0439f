"""Set a Table 3 / Table 4 CSV from ``ibo-simulate table3|table4`` next to the paper's appendix C.

    python models/simulation/vs_paper.py models/simulation/table3.csv > models/simulation/table3_vs_paper.txt
    python models/simulation/vs_paper.py models/simulation/table4.csv > models/simulation/table4_vs_paper.txt

Table 3 is compared cell by cell with the reference's saved replicates
(``../shared/data/hotspot_reference/simulation_output/coverage_<FAMILY>_<node>_<n>.rds``,
1000 replicates each, whose column means are the published table): for each
cell, the number of covered replicates out of 1000 in both runs, and a
two-sided Fisher exact test of equal coverage (``p``), with Holm's adjustment
over the 27 cells of a column (``p_holm``). Both the truth and the gamma
columns are compared.

Table 4 has no saved replicates beyond the EI-omitted runs at n_obs = 10
(``<FAMILY>_EI_omitted_<node>_10.rds``: the omitted-family run's parameter
range of that family in the set, +-inf when absent), which are tested the same
way; the other cells are set against the published values (``tests/paper_values.py``;
they never enter the library), with ``z`` the difference in units of the combined
Monte-Carlo standard error.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from paper_values import TABLE4

from ibo_pymc.tasks.hotspot.forward.argmax import TableConfig

N_OBS = (10, 100, 1000)
REFERENCE = ROOT.parent / "shared" / "data" / "hotspot_reference" / "simulation_output"


def read_rds(path: Path) -> np.ndarray:
    import rdata

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Missing constructor")
        return np.asarray(rdata.read_rds(str(path)), float)


def node(family: str, param: float) -> int:
    """The 1-based grid node of a parameter, as the reference scripts number them."""
    return int(np.argmin(np.abs(TableConfig().params(family) - param))) + 1


def holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p)
    adj = np.minimum(1.0, np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order]))
    out = np.empty_like(adj)
    out[order] = adj
    return out


def fisher(a: int, n: int, b: int, m: int) -> float:
    return float(stats.fisher_exact([[a, n - a], [b, m - b]]).pvalue)


def table3(df: pd.DataFrame, ref: Path) -> None:
    rows = []
    for r in df.itertuples():
        k = node(r.family, r.param)
        saved = read_rds(ref / f"coverage_{r.family}_{k}_{int(r.n_obs)}.rds")
        col = 0 if r.covered == "truth" else 1
        theirs = int(saved[:, col].sum())
        ours = int(round(r.coverage * r.reps))
        rows.append(
            {
                "family": r.family,
                "node": k,
                "param": r.param,
                "n_obs": int(r.n_obs),
                "covered": r.covered,
                "ours": ours,
                "reps": int(r.reps),
                "reference": theirs,
                "ref_reps": len(saved),
                "diff": ours / r.reps - theirs / len(saved),
                "p": fisher(ours, int(r.reps), theirs, len(saved)),
            }
        )
    out = pd.DataFrame(rows)
    for what in ("truth", "gamma"):
        sub = out[out["covered"] == what].copy()
        if sub.empty:
            continue
        sub["p_holm"] = holm(sub["p"].to_numpy())
        label = "the truth" if what == "truth" else f"gamma = {df['gamma'].iloc[0]:.4f}"
        print(f"Coverage of {label}: ours vs the reference's saved replicates (covered / replicates)\n")
        print(sub.drop(columns="covered").to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(
            f"\n{len(sub)} cells; Fisher exact p < 0.05 in {int((sub['p'] < 0.05).sum())} "
            f"(about {0.05 * len(sub):.1f} expected by chance), p < 0.01 in {int((sub['p'] < 0.01).sum())}; "
            f"Holm-adjusted p < 0.05 in {int((sub['p_holm'] < 0.05).sum())}; "
            f"max |diff| {np.abs(sub['diff']).max():.3f}\n"
        )


def printed(family: str, param: float) -> float:
    """The value the paper prints for a truth (UCB's node 31, p = 0.745, is printed 0.75)."""
    return {("UCB", 0.745): 0.75}.get((family, round(float(param), 6)), float(param))


def table4(df: pd.DataFrame, ref: Path) -> None:
    df = df.copy()
    df["paper"] = [
        TABLE4[(r.family, printed(r.family, r.param))][r.covered][N_OBS.index(int(r.n_obs))] for r in df.itertuples()
    ]
    df["diff"] = df["coverage"] - df["paper"]
    se = np.sqrt(df["mcse"] ** 2 + np.maximum(df["paper"] * (1 - df["paper"]), 1 / 1000) / 1000)
    df["z"] = np.sign(df["diff"]) * np.maximum(np.abs(df["diff"]) - 0.005, 0) / se
    print("Table 4 against the published values (z: difference beyond rounding in combined MC se)\n")
    print(
        df[["family", "param", "n_obs", "covered", "coverage", "mcse", "paper", "diff", "z"]].to_string(
            index=False, float_format=lambda v: f"{v:.3f}"
        )
    )
    ok = np.abs(df["z"]) <= 2
    print(
        f"\ncells: {len(df)}; within 2 combined MC se (+0.005 rounding): {int(ok.sum())}; "
        f"max |diff| {np.abs(df['diff']).max():.3f}\n"
    )
    rows = []
    for r in df[(df["family"] == "EI") & (df["n_obs"] == 10)].itertuples():
        k = node(r.family, r.param)
        saved = read_rds(ref / f"{r.covered}_EI_omitted_{k}_10.rds")
        theirs = int(np.isfinite(saved[:, 0]).sum())
        ours = int(round(r.coverage * r.reps))
        rows.append(
            {
                "family": "EI",
                "node": k,
                "param": r.param,
                "n_obs": 10,
                "present": r.covered,
                "ours": ours,
                "reference": theirs,
                "diff": ours / r.reps - theirs / len(saved),
                "p": fisher(ours, int(r.reps), theirs, len(saved)),
            }
        )
    if rows:
        out = pd.DataFrame(rows)
        print("EI omitted, n_obs = 10, against the reference's saved replicates (Fisher exact test)\n")
        print(out.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def main(path: str, ref: str | None = None) -> None:
    df = pd.read_csv(path)
    ref_dir = Path(ref) if ref else REFERENCE
    if df["omit"].any():
        table4(df, ref_dir)
    else:
        table3(df, ref_dir)


if __name__ == "__main__":
    main(*sys.argv[1:])
