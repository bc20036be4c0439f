"""A hotspot fit in words: what ``ibo-sample`` prints (:meth:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel.report`)
and the row of the cohort's convergence table."""

from __future__ import annotations

import pandas as pd

from ibo_pymc.engine.config import HDI_PROB


def headline(diag: pd.DataFrame) -> str:
    """Worst R-hat, smallest ESS and divergences of a fit's :func:`~.diagnostics.diagnostics`, in one line."""
    d = diag[diag["required"]]
    skipped = [q[6:] for q in diag.index[~diag["required"]]]
    return (
        f"R-hat max {d['r_hat'].max():.3f}, bulk ESS min {d['ess_bulk'].min():.0f}, "
        f"tail ESS min {d['ess_tail'].min():.0f}, divergences {diag.attrs['divergences']} "
        f"({100 * diag.attrs['divergences'] / diag.attrs['draws']:.2f}% of draws)"
        + (f"; not checked (posterior probability < 0.001): {', '.join(skipped)}" if skipped else "")
    )


def same_curve_note(summ: pd.DataFrame, probs: dict) -> str | None:
    """A line for the user when PI and UCB share the posterior because they describe one curve: PI with xi near
    0 and UCB with p near 0.5 both choose the argmax of the surrogate's mean (the data cannot tell them apart,
    so their probabilities split the mass; the notebook on subject 28 explains it)."""

    def mean_of(family, name):
        rows = summ[(summ["family"] == family) & (summ["parameter"] == name)]
        return float(rows["mean"].iloc[0]) if len(rows) else None

    xi, p = mean_of("PI", "xi_pi"), mean_of("UCB", "p_ucb")
    if xi is None or p is None or min(probs.get("PI", 0.0), probs.get("UCB", 0.0)) < 0.05:
        return None
    if xi < 0.1 and p < 0.51:
        return (
            f"note: PI (xi {xi:.3f}) and UCB (p {p:.3f}) are here the same curve, the argmax of the posterior "
            "mean; the data cannot tell them apart, so their probabilities share one explanation (pure "
            "exploitation)"
        )
    return None


def fit_report(m, elapsed: float | None = None, hdi_prob: float = HDI_PROB) -> str:
    """One subject's fit: rounds and draws, family probabilities, the summary of the components with
    probability >= 0.001 (HDIs of mass ``hdi_prob``), the convergence headline, and the same-curve note where
    it applies."""
    diag = m.diagnostics()
    probs = m.family_probabilities().to_dict()
    summ = m.summary(hdi_prob)
    summ = summ[summ["probability"] >= 1e-3]
    lines = [
        f"\nsubject {m.obs.subject} (user {m.obs.user_id}), model {m.config.model}: "
        f"{m.obs.n_rounds} rounds, {diag.attrs['draws']} draws" + (f", {elapsed:.1f} s" if elapsed is not None else ""),
        "posterior family probabilities: " + ", ".join(f"{f} {p:.3f}" for f, p in probs.items()),
    ]
    with pd.option_context("display.width", 140, "display.max_columns", 20):
        cols = [c for c in summ.columns if c != "probability"]
        ess = {c: (lambda v: f"{v:.0f}") for c in cols if c.startswith("ess")}  # effective sizes are counts
        lines.append(summ[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}", formatters=ess))
    lines.append(headline(diag))
    note = same_curve_note(summ, probs)
    return "\n".join(lines + ([note] if note else []))


def convergence_row(m) -> dict:
    """One fit's row of the cohort's convergence table (``ibo-sample --subject all``: convergence-MODEL.csv)."""
    diag = m.diagnostics()
    req = diag[diag["required"]]
    probs = m.family_probabilities().to_dict()
    # no timings in the table: the same seed must give the same bytes (timings are printed)
    return {
        "subject": m.obs.subject,
        "model": m.config.model,
        "r_hat_max": req["r_hat"].max(),
        "ess_bulk_min": req["ess_bulk"].min(),
        "ess_tail_min": req["ess_tail"].min(),
        "divergences": diag.attrs["divergences"],
        "draws": diag.attrs["draws"],
        "thin": m.idata.posterior.attrs["thin"],
        **{f"p_{f}": p for f, p in probs.items()},
        "converged": bool(diag["converged"].all()),
        "failing": " ".join(m.failing()),
    }
