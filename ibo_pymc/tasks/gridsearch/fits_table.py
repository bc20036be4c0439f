"""Many participants' Bayesian fits as one table: posterior intervals, family probabilities, LOO, convergence.

:func:`summary_row` reads one fitted model (:class:`~.model.GridSearchModel`), with the engine's reliable LOO
over rounds (per-family PSIS, moment matching, exact refits of the rounds still at Pareto k > 0.7:
``max_pareto_k`` is the largest k left, ``n_refit`` the rounds refitted); :func:`summarise_fits` reads a list of
saved fits. ``ibo-sample --task gridsearch --subject all`` computes each row in a job of its own and writes
the table beside the fits; notebook 07 compares the contexts with it.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ibo_pymc.engine.config import HDI_PROB


def summary_row(model, hdi_prob: float = HDI_PROB) -> dict:
    """One participant and context: posterior mean and HDI of lambda (or error_variance), tau (both family-
    marginalised) and beta given UCB; posterior family probabilities; reliable LOO by round; convergence.
    ``model``: a fitted :class:`~.model.GridSearchModel`."""
    import arviz as az

    from ibo_pymc.tasks.gridsearch.model import convergence, family_probabilities, headline

    idata = model.idata
    post = idata.posterior
    a = post.attrs
    row = {"participant": int(a["subject"]), "context": a["context"], "surrogate": a["surrogate"]}
    for name in ("lambda", "error_variance", "tau", "beta"):
        # beta: UCB's conditional posterior (the only family with one); the others family-marginalised
        da = idata["conditional_posterior"].get("beta") if name == "beta" else post.get(name)
        if da is None:
            continue
        v = da.values.ravel()
        lo, hi = az.hdi(v, hdi_prob=hdi_prob)
        key = name
        row.update(
            {
                f"{key}_mean": float(v.mean()),
                f"{key}_median": float(np.median(v)),
                f"{key}_lo": float(lo),
                f"{key}_hi": float(hi),
            }
        )
    row.update({f"p_{f}": float(p) for f, p in family_probabilities(idata).items()})
    loo = model.loo()
    row.update(
        {
            "elpd_loo": float(loo.elpd_loo),
            "elpd_loo_se": float(loo.se),
            "p_loo": float(loo.p_loo),
            "max_pareto_k": float(np.max(loo.pareto_k.values)),
            "n_refit": int(loo["n_refit"]),
        }
    )
    row.update(headline(convergence(idata)))
    return row


def summary_of(path, hdi_prob: float = HDI_PROB) -> dict:
    """One execution-layer job: the :func:`summary_row` of the fit saved at ``path``."""
    from ibo_pymc.tasks.gridsearch.model import GridSearchModel

    return summary_row(GridSearchModel.load(path), hdi_prob)


def summarise_fits(rows) -> pd.DataFrame:
    """The summary table: rows of :func:`summary_row`, or saved fits (paths; each loaded and summarised here)."""
    from ibo_pymc.tasks.gridsearch.model import GridSearchModel

    rows = [summary_row(GridSearchModel.load(r)) if isinstance(r, (str, os.PathLike)) else r for r in rows]
    return pd.DataFrame(rows).sort_values(["context", "participant"], kind="stable").reset_index(drop=True)
