"""Simulation-based calibration (SBC; Talts et al. 2018) of any task's fit: ranks, their uniformity, the figure.

A task's replicate draws a truth from the prior, simulates data from it, fits the model and ranks every true
value among thinned draws of the family-marginalised posterior (:func:`posterior_ranks`). If the fit is
calibrated, each rank is uniform on 0..n_ranks; :func:`uniformity` applies a chi-square test to each
quantity's rank histogram and :func:`plot_ranks` draws them. The quantities are the continuous parameters of the
family-marginalised model and the family itself: a parameter of a family other than a draw's own is a prior
draw in the posterior, exactly as it is in the truth, so every quantity is calibrated jointly with the family.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: columns of a table of ranks that are not ranks
NOT_RANKS = ("family", "family_index", "max_rhat")


def rank(draws: np.ndarray, truth: float, rng: np.random.Generator) -> int:
    """The rank of ``truth`` among ``draws``, ties broken at random as SBC prescribes."""
    less = int((draws < truth).sum())
    equal = int((draws == truth).sum())
    return less + int(rng.integers(0, equal + 1))


def posterior_ranks(posterior, truth: dict, family: str, rng: np.random.Generator, n_ranks: int = 99) -> dict:
    """The ranks of the true values (``truth``: name -> value, in that order) and of the true family among
    ``n_ranks`` posterior draws picked at random without replacement: one replicate's row."""
    total = posterior.sizes["chain"] * posterior.sizes["draw"]
    pick = np.sort(rng.choice(total, size=n_ranks, replace=False))
    labels = posterior["family_draw"].attrs.get("labels")
    families = labels.split(",") if labels else [str(f) for f in posterior["family"].values]
    k = families.index(family)
    out = {"family": family, "family_index": k}
    for name, v in truth.items():
        out[name] = rank(posterior[name].values.reshape(-1)[pick], v, rng)
    out["family_draw"] = rank(posterior["family_draw"].values.reshape(-1)[pick], k, rng)
    return out


def run_sbc(replicate, args: tuple, reps: int, *, seed: int = 0, executor=None, progress=None, **kw) -> pd.DataFrame:
    """``reps`` replicates ``replicate(*args, seed_i, **kw)`` as a table (one row per replicate, in replicate
    order). Replicate ``i`` has its own seed (spawned from ``seed``), so the table does not depend on
    ``executor`` (None: this process; see :mod:`ibo_pymc.execution`)."""
    from ibo_pymc.execution.runner import Job, run_jobs

    seeds = np.random.SeedSequence(seed).spawn(reps)
    jobs = [Job(f"SBC replicate {i + 1}", replicate, (*args, s), kw) for i, s in enumerate(seeds)]
    out = run_jobs(jobs, executor, label="sbc", progress=progress).raise_failures()
    return pd.DataFrame(out.results)


def uniformity(ranks: pd.DataFrame, n_ranks: int = 99, bins: int = 10) -> pd.DataFrame:
    """Chi-square test of uniform ranks per quantity (``bins`` equal bins of 0..n_ranks)."""
    from scipy import stats

    rows = []
    edges = np.linspace(0, n_ranks + 1, bins + 1)
    for col in ranks.columns:
        if col in NOT_RANKS:
            continue
        counts, _ = np.histogram(ranks[col].to_numpy(), bins=edges)
        expected = len(ranks) / bins
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        rows.append(
            {
                "quantity": col,
                "chi2": chi2,
                "df": bins - 1,
                "p_value": float(stats.chi2.sf(chi2, bins - 1)),
                "reps": len(ranks),
            }
        )
    return pd.DataFrame(rows).set_index("quantity")


def plot_ranks(ranks: pd.DataFrame, n_ranks: int = 99, bins: int = 10):
    """Rank histograms with the 99% band of a uniform histogram, one panel per quantity."""
    import matplotlib.pyplot as plt
    from scipy import stats

    cols = [c for c in ranks.columns if c not in NOT_RANKS]
    ncols = 4
    nrows = int(np.ceil(len(cols) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.3 * nrows), squeeze=False)
    edges = np.linspace(0, n_ranks + 1, bins + 1)
    n = len(ranks)
    lo, hi = stats.binom.ppf([0.005, 0.995], n, 1 / bins)
    test = uniformity(ranks, n_ranks, bins)
    for ax, c in zip(axes.ravel(), cols):
        ax.axhspan(lo, hi, color="0.88", lw=0)
        ax.axhline(n / bins, color="0.5", lw=0.8)
        ax.hist(ranks[c], bins=edges, color="tab:blue", alpha=0.8)
        ax.set_title(f"{c}  (chi-square p = {test.loc[c, 'p_value']:.2f})", fontsize=8)
        ax.set_yticks([])
    for ax in axes.ravel()[len(cols) :]:
        ax.set_visible(False)
    fig.suptitle(f"SBC rank histograms, {n} replicates (grey: 99% band of a uniform histogram)", fontsize=9)
    fig.tight_layout()
    return fig
