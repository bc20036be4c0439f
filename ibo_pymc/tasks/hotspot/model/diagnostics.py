"""Convergence diagnostics and summaries of a fit (R-hat, bulk and tail ESS, divergences)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.engine.convergence import diagnose_variable, ess_bulk, rhat
from ibo_pymc.engine.fitting import diagnose, meets_targets
from ibo_pymc.engine.results import component_table
from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
from ibo_pymc.tasks.hotspot.forward.variants import tau_names
from ibo_pymc.tasks.hotspot.model.builder import components
from ibo_pymc.tasks.hotspot.model.config import FitConfig


def conditional_diagnostics(parameters, comps, cond: dict) -> dict:
    """Worst R-hat and smallest bulk / tail ESS over each component's free parameters, by component label.

    ``parameters`` is a :class:`~ibo_pymc.tasks.hotspot.model.parameters.ComponentParameters`,
    ``cond`` the stacked conditional draws.
    """
    out = {}
    for k, c in enumerate(comps):
        d = parameters.draws(comps, cond, k)
        r, eb, et = diagnose(np.stack([d[key] for key, _, _ in parameters.columns(c)], axis=-1))
        out[c.label] = {"r_hat": r, "ess_bulk": eb, "ess_tail": et}
    return out


def diagnostics(idata) -> pd.DataFrame:
    """Convergence table of a fit: one row per posterior quantity and per family's conditional block.

    Column ``required`` is False for the conditional block of a family whose
    posterior probability is below the fit's ``relevance`` threshold; ``converged``: not required, or within
    the fit's R-hat and bulk/tail ESS targets (the columns of every task's
    :meth:`~ibo_pymc.engine.model.IBOModelBase.diagnostics`).
    """
    post = idata.posterior
    names = [v for v in post.data_vars if v != "family_draw"]
    rows = []
    for v in names:
        with np.errstate(invalid="ignore", divide="ignore"):  # a constant quantity's R-hat is 0/0: set below
            rh, eb, et = diagnose_variable(post[v])  # over the variable's family dimension, if it has one
        if "family" in post[v].dims:
            for i, f in enumerate(post[v]["family"].values):
                rows.append((f"{v}[{f}]", float(rh[i]), float(eb[i]), float(et[i])))
        else:
            rows.append((v, rh, eb, et))
    df = pd.DataFrame(rows, columns=["quantity", "r_hat", "ess_bulk", "ess_tail"]).set_index("quantity")
    # a constant quantity (e.g. a family probability of exactly 0) has no R-hat: it cannot disagree
    const = [q for q in df.index if np.isnan(df.loc[q, "r_hat"])]
    for q in const:
        df.loc[q, ["r_hat"]] = 1.0
    df["required"] = True
    cfg = FitConfig.from_dict(json.loads(post.attrs["config"])) if "config" in post.attrs else FitConfig()
    for label, d in component_table(idata).iterrows():
        # a component with posterior probability below `relevance` contributes no draws: its
        # conditional chains are reported but not held to the convergence targets
        df.loc[f"given {label}"] = [d["r_hat"], d["ess_bulk"], d["ess_tail"], d["probability"] >= cfg.relevance]
    df["required"] = df["required"].astype(bool)
    df["converged"] = ~df["required"] | meets_targets(df["r_hat"], df["ess_bulk"], df["ess_tail"], cfg)
    df.attrs["divergences"] = int(idata.sample_stats["diverging"].sum())
    df.attrs["draws"] = int(post.sizes["chain"] * post.sizes["draw"])
    return df


def summary(idata, hdi_prob: float = HDI_PROB) -> pd.DataFrame:
    """Per component (a family, or a stratum of one): probability and the conditional
    posterior mean, sd and HDI of each parameter."""
    import arviz as az

    post = idata.posterior
    cond = idata["conditional_posterior"]
    probs = component_table(idata)["probability"]
    model = post.attrs["model"]
    rows = []
    for k, c in enumerate(components(idata)):
        fam = get_family(c.family)
        for name in (fam.var_name, "gamma", "w", *tau_names(model)):
            arr = cond[c.var_name if name == fam.var_name else name]
            if "component" in arr.dims:
                arr = arr.isel(component=k)
            v = arr.values
            lo, hi = az.hdi(v.ravel(), hdi_prob=hdi_prob)
            rows.append(
                {
                    "family": c.family,
                    "component": c.label,
                    "probability": probs[c.label],
                    "parameter": name,
                    "mean": float(v.mean()),
                    "sd": float(v.std()),
                    f"hdi_{hdi_prob:g}_low": float(lo),
                    f"hdi_{hdi_prob:g}_high": float(hi),
                    "r_hat": rhat(v),
                    "ess_bulk": ess_bulk(v),
                }
            )
    return pd.DataFrame(rows)
