"""The figure of random-effects BMS: expected frequencies with their credible intervals, and exceedance
probabilities (plain and protected), one panel per comparison."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.population.bms import BMSResult


def plot_bms(results: dict[str, BMSResult], *, labels: dict | None = None, prob: float = HDI_PROB):
    """One panel per ``title -> BMSResult``: bars of the expected frequencies with equal-tailed ``prob``
    intervals of q(r), the null's 1/K as a dotted line, and beside each bar its exceedance probability (xp)
    and protected exceedance probability (pxp); the Bayesian omnibus risk in the panel title."""
    labels = labels or {}
    n = len(results)
    widths = [max(len(r.names), 2) for r in results.values()]
    fig, axes = plt.subplots(
        1, n, figsize=(1.2 * sum(widths) + 1.5 * n, 3.8), squeeze=False, gridspec_kw={"width_ratios": widths}
    )
    for ax, (title, r) in zip(axes[0], results.items()):
        x = np.arange(len(r.names))
        ci = r.frequency_interval(prob)
        f = r.expected_frequency
        ax.bar(x, f, color="0.75", edgecolor="0.2", width=0.6)
        ax.errorbar(
            x,
            f,
            yerr=[f - ci["lower"].to_numpy(), ci["upper"].to_numpy() - f],
            fmt="none",
            ecolor="0.1",
            capsize=3,
            lw=1,
        )
        ax.axhline(1.0 / len(r.names), color="0.4", ls=":", lw=1)
        for xi, hi, xp, pxp in zip(x, ci["upper"], r.exceedance_probability, r.protected_exceedance_probability):
            ax.text(xi, min(hi + 0.03, 1.02), f"xp {xp:.2f}\npxp {pxp:.2f}", ha="center", va="bottom", fontsize=7.5)
        ax.set_xticks(
            x,
            [labels.get(m, m) for m in r.names],
            rotation=0 if len(r.names) <= 4 else 45,
            ha="center" if len(r.names) <= 4 else "right",
        )
        ax.set_ylim(0, 1.18)
        ax.set_title(f"{title}\nBOR {r.bor:.2g}, {len(r.posterior)} subjects", fontsize=9)
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel(f"expected frequency ({int(100 * prob)}% interval)")
    fig.tight_layout()
    return fig


def plot_shrinkage(table, population=None, *, labels: dict | None = None):
    """Each subject's posterior mean of every shared parameter alone (left) and under the hierarchical model
    (right), joined by a line; the population median (dashed) where ``population`` (the hierarchical fit's
    :meth:`~ibo_pymc.engine.hierarchical.HierarchicalFit.population` table) is given."""
    labels = labels or {}
    params = list(dict.fromkeys(table["parameter"]))
    fig, axes = plt.subplots(1, len(params), figsize=(2.6 * len(params), 3.6), squeeze=False)
    for ax, name in zip(axes[0], params):
        t = table[table["parameter"] == name]
        for _, r in t.iterrows():
            ax.plot([0, 1], [r["independent"], r["hierarchical"]], color="0.45", lw=0.8, marker="o", ms=3)
        if population is not None:
            row = population[(population["quantity"] == "median") & (population["label"] == name)]
            if len(row):
                ax.axhline(float(row["mean"].iloc[0]), color="C3", ls="--", lw=1, label="population median")
        ax.set_xticks([0, 1], ["alone", "hierarchical"])
        ax.set_xlim(-0.3, 1.3)
        ax.set_title(labels.get(name, name), fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel("posterior mean")
    if population is not None:
        axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def plot_family_probabilities(probabilities, *, labels: dict | None = None):
    """A cohort's posterior family probabilities: one stacked bar per subject (rows of ``probabilities``, a
    subjects x families table), families in a fixed colour order; returns the figure."""
    import pandas as pd

    probs = pd.DataFrame(probabilities)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.35 * len(probs) + 1.5), 3.0))
    bottom = np.zeros(len(probs))
    x = np.arange(len(probs))
    for k, fam in enumerate(probs.columns):
        v = probs[fam].to_numpy(float)
        ax.bar(x, v, bottom=bottom, color=plt.cm.tab10(k % 10), label=(labels or {}).get(fam, fam), width=0.8)
        bottom += v
    ax.set_xticks(x, [str(s) for s in probs.index], rotation=90 if len(probs) > 20 else 0, fontsize=7)
    ax.set_xlabel(probs.index.name or "subject")
    ax.set_ylabel("posterior probability")
    ax.set_ylim(0, 1)
    ax.legend(
        fontsize=7, ncol=min(5, len(probs.columns)), loc="upper center", bbox_to_anchor=(0.5, 1.18), frameon=False
    )
    fig.tight_layout()
    return fig
