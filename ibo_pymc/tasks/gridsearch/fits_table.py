"""Many participants' Bayesian fits as one table: posterior intervals, family probabilities, LOO, convergence.

:func:`summary_row` reads one fit (InferenceData of :mod:`.model`);
:func:`summarise_fits` reads a folder or list of saved fits. ``ibo-sample --task
gridsearch --subject all`` writes this table beside the fits; notebook 07
compares the contexts with it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

#: the interval of the summary (highest density)
HDI_PROB = 0.9


def summary_row(idata, hdi_prob: float = HDI_PROB) -> dict:
    """One participant and context: posterior mean and HDI of lambda (or error_variance), tau (both family-
    marginalised) and beta given UCB; posterior family probabilities; PSIS-LOO by round; convergence."""
    import arviz as az

    from ibo_pymc.tasks.gridsearch.compare import loo_by_round
    from ibo_pymc.tasks.gridsearch.model import (
        convergence,
        family_probabilities,
        headline,
    )

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
        row.update({f"{key}_mean": float(v.mean()), f"{key}_median": float(np.median(v)), f"{key}_lo": float(lo), f"{key}_hi": float(hi)})
    row.update({f"p_{f}": float(p) for f, p in family_probabilities(idata).items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Pareto k are reported in the table
        loo = loo_by_round(idata)
    row.update({"elpd_loo": float(loo.elpd_loo), "elpd_loo_se": float(loo.se), "p_loo": float(loo.p_loo),
                "pareto_k_max": float(np.max(loo.pareto_k.values))})
    row.update(headline(convergence(idata)))
    return row


def summarise_fits(paths) -> pd.DataFrame:
    """The summary table of saved fits (a folder: every ``gridsearch-*.nc`` in it)."""
    from ibo_pymc.tasks.gridsearch.model import load

    if isinstance(paths, (str, Path)) and Path(paths).is_dir():
        paths = sorted(Path(paths).glob("gridsearch-*.nc"))
    rows = [summary_row(load(p)[0]) for p in paths]
    return pd.DataFrame(rows).sort_values(["context", "participant"], kind="stable").reset_index(drop=True)
