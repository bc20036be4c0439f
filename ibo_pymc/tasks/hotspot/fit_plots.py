"""Figures of fitted subjects (paper Figs 7, 8 and 12) and of the model comparison.

* :func:`plot_fit` -- one subject: the (delta_r1, theta2) moves, the 95%
  prediction region of theta2 (grey; it may be several arcs and wrap through
  +-pi), the 95% credible band of the acquisition curve +-theta*(delta_r1) and
  its posterior median, coloured by the most probable family.
* :func:`plot_cohort` -- the same for many subjects in a grid (Fig 12).
* :func:`plot_loo` -- per subject, the LOO difference of u and ũ from ũ± with
  its standard error (from :func:`ibo_pymc.tasks.hotspot.compare.loo_table` rows).

Every function returns the matplotlib ``Figure``; :func:`ibo_pymc.io.save_figure` writes PNG
or PDF atomically.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibo_pymc.engine.results import family_probability
from ibo_pymc.tasks.hotspot.plots import FAMILY_COLOURS
from ibo_pymc.tasks.hotspot.regions import Regions, regions

MODEL_LABELS = {"u": "u", "tau": "ũ", "tau_pm": "ũ±"}


def _arc_pieces(arcs):
    for lo, hi in arcs:
        if lo <= hi:
            yield lo, hi
        else:  # through +-pi: two pieces
            yield lo, np.pi
            yield -np.pi, hi


def plot_fit(
    idata, reg: Regions | None = None, *, ax=None, legend: bool = True, title: str | None = None, seed: int = 0
):
    """One subject's moves, prediction region and credible band (paper Figs 7-8)."""
    reg = reg or regions(idata, seed=seed)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.4, 4.2))
    else:
        fig = ax.figure
    d = reg.delta_r1
    width = (d[1] - d[0]) if len(d) > 1 else 1.0
    for j, arcs in enumerate(reg.prediction):
        for lo, hi in _arc_pieces(arcs):
            ax.add_patch(plt.Rectangle((d[j] - width / 2, lo), width, hi - lo, color="0.82", lw=0, zorder=0))
    fam = reg.labels[int(np.argmax(reg.family_share))]
    colour = FAMILY_COLOURS.get(fam, "tab:purple")
    for sign in (1, -1):
        lo, hi = sign * reg.credible[:, 0], sign * reg.credible[:, 1]
        ax.fill_between(d, np.minimum(lo, hi), np.maximum(lo, hi), color=colour, alpha=0.35, lw=0, zorder=1)
        ax.plot(d, sign * reg.curve_median, color=colour, lw=1.4, zorder=2)
    x = idata.constant_data["delta_r1"].values
    y = idata.observed_data["theta2"].values
    ax.scatter(x, y, s=6, color="k", alpha=0.6, zorder=3, lw=0)
    ax.set_xlim(d[0] - width / 2, d[-1] + width / 2)
    ax.set_ylim(-np.pi, np.pi)
    ax.set_yticks([-np.pi, -np.pi / 2, 0, np.pi / 2, np.pi], ["-π", "-π/2", "0", "π/2", "π"])
    ax.set_xlabel("Δr1 (score change after move 1)")
    ax.set_ylabel("θ2 (turn at move 2)")
    post = idata.posterior
    probs = family_probability(idata)
    if title is None:
        title = (
            f"subject {post.attrs['subject']}, {MODEL_LABELS.get(post.attrs['model'], post.attrs['model'])}: "
            + ", ".join(f"P({f})={p:.2f}" for f, p in probs.items())
        )
    ax.set_title(title, fontsize=9)
    if legend:
        handles = [
            plt.Rectangle((0, 0), 1, 1, color="0.82"),
            plt.Rectangle((0, 0), 1, 1, color=colour, alpha=0.35),
            plt.Line2D([], [], color=colour),
            plt.Line2D([], [], marker="o", ls="", color="k", ms=3),
        ]
        labels = [
            f"{reg.prob:.0%} prediction region of θ2",
            f"{reg.prob:.0%} credible band of ±θ* ({fam})",
            "posterior median ±θ*",
            "moves",
        ]
        ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def plot_cohort(fits: dict, *, ncols: int = 7, seed: int = 0):
    """A grid of :func:`plot_fit` panels, one per subject (paper Fig 12). ``fits``: subject -> InferenceData."""
    subjects = sorted(fits)
    nrows = int(np.ceil(len(subjects) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.3 * ncols, 1.9 * nrows), sharex=True, sharey=True, squeeze=False)
    for ax in axes.ravel()[len(subjects) :]:
        ax.set_visible(False)
    for ax, s in zip(axes.ravel(), subjects):
        idata = fits[s]
        probs = family_probability(idata)
        best = max(probs, key=probs.get)
        plot_fit(idata, ax=ax, legend=False, title=f"{s}: {best} {probs[best]:.2f}", seed=seed)
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.tick_params(labelsize=6)
        ax.title.set_fontsize(7)
    fig.supxlabel("Δr1")
    fig.supylabel("θ2")
    fig.tight_layout()
    return fig


def plot_loo(rows, *, reference: str = "tau_pm", ax=None):
    """Per subject, elpd_loo of each model minus the reference model's, with the se of the difference.

    ``rows``: the table of :func:`ibo_pymc.tasks.hotspot.compare.compare_subject` for many subjects
    (columns subject, model, diff_ref, se_diff_ref).
    """
    import pandas as pd

    rows = pd.DataFrame(rows)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 3.6))
    else:
        fig = ax.figure
    subjects = sorted(rows["subject"].unique())
    others = [m for m in rows["model"].unique() if m != reference]
    for i, m in enumerate(others):
        r = rows[rows["model"] == m].set_index("subject").reindex(subjects)
        x = np.arange(len(subjects)) + (i - (len(others) - 1) / 2) * 0.25
        ax.errorbar(
            x,
            r["diff_ref"],
            yerr=2 * r["se_diff_ref"],
            fmt="o",
            ms=3,
            lw=0.8,
            label=f"{MODEL_LABELS.get(m, m)} − {MODEL_LABELS.get(reference, reference)} (± 2 se)",
        )
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xticks(np.arange(len(subjects)), [str(s) for s in subjects], fontsize=7)
    ax.set_xlim(-0.6, len(subjects) - 0.4)
    ax.set_xlabel("subject")
    ax.set_ylabel("Δ elpd_loo")
    ax.legend(fontsize=8)
    ax.set_title("PSIS-LOO: below zero favours " + MODEL_LABELS.get(reference, reference), fontsize=9)
    fig.tight_layout()
    return fig
