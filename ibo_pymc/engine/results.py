"""Reading a fit's per-component results: evidences, probabilities and convergence of each component (any task).

Since fit format 3 they are variables of the InferenceData group
``component_evidence`` with dim ``component`` (a family, or a stratum of one:
``component_family``, ``log_evidence``, ``log_evidence_rel_error``,
``probability``, ``r_hat``, ``ess_bulk``, ``ess_tail``) and, for the family
sums, dim ``family`` (``family_log_evidence``, ``family_probability``). Fits saved in format 2 held the same
numbers as JSON strings in the attrs; both are read here, so callers never
parse attrs.

The log model evidence (:func:`log_evidence`) follows from the components:
``p(y | family) = sum of Z_c`` over the family's components (strata), and
``p(y | model) = mean over families of p(y | family)`` (the families' prior is
uniform). Its standard error on the log scale is the relative error of the
sum, ``sqrt(sum_c (Z_c r_c)^2) / sum_c Z_c`` (the bridge estimates of the
components are independent; ``r_c`` is each one's relative error).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr

#: columns of :func:`component_table`
COLUMNS = ("family", "log_evidence", "log_evidence_rel_error", "probability", "r_hat", "ess_bulk", "ess_tail")


def component_table(idata) -> pd.DataFrame:
    """One row per component (index: its label) with :data:`COLUMNS`."""
    if "component_evidence" in idata.groups():
        ds = idata["component_evidence"]
        cols = {c: ds["component_family" if c == "family" else c].values for c in COLUMNS}
        df = pd.DataFrame(cols, index=pd.Index([str(v) for v in ds["component"].values], name="component"))
        df["family"] = df["family"].astype(str)
        return df
    attrs = idata.posterior.attrs  # format 2
    comps = json.loads(attrs["components"])
    ev = json.loads(attrs["component_log_evidence"])
    err = json.loads(attrs["component_log_evidence_rel_error"])
    prob = json.loads(attrs["component_probability"])
    diag = json.loads(attrs.get("conditional_diagnostics", "{}"))
    rows = [
        {
            "family": c["family"],
            "log_evidence": ev[c["label"]],
            "log_evidence_rel_error": err[c["label"]],
            "probability": prob[c["label"]],
            **{k: diag.get(c["label"], {}).get(k, np.nan) for k in ("r_hat", "ess_bulk", "ess_tail")},
        }
        for c in comps
    ]
    return pd.DataFrame(rows, index=pd.Index([c["label"] for c in comps], name="component"))[list(COLUMNS)]


def family_table(idata) -> pd.DataFrame:
    """Per family: ``log_evidence`` (summed over its strata) and posterior ``probability``."""
    if "component_evidence" in idata.groups():
        ds = idata["component_evidence"]
        return pd.DataFrame(
            {"log_evidence": ds["family_log_evidence"].values, "probability": ds["family_probability"].values},
            index=pd.Index([str(v) for v in ds["family"].values], name="family"),
        )
    attrs = idata.posterior.attrs
    ev = json.loads(attrs["family_log_evidence"])
    prob = json.loads(attrs["family_probability"])
    return pd.DataFrame({"log_evidence": ev, "probability": prob}).rename_axis("family")


def family_probability(idata) -> dict:
    """Family -> posterior probability."""
    return {f: float(p) for f, p in family_table(idata)["probability"].items()}


def sum_with_error(log_z: np.ndarray, rel_error: np.ndarray) -> tuple[float, float]:
    """log of sum(Z_c) and the relative error of the sum, from log Z_c and the relative errors r_c. A component
    without an error estimate (NaN: a family screened out by its Laplace evidence, whose weight is below
    ``exp(-screen)``) counts as exact in the sum."""
    from scipy.special import logsumexp

    total = float(logsumexp(log_z))
    with np.errstate(divide="ignore"):
        err = float(np.exp(0.5 * logsumexp(2 * (log_z + np.log(np.nan_to_num(rel_error, nan=0.0)))) - total))
    return total, err


def log_evidence(idata) -> pd.DataFrame:
    """Log evidence of the fit's model and of each family, with standard errors (module docstring).

    One row per family (``log p(y | family, model)``) and a last row ``all`` for the
    model with the family marginalised (``log p(y | model)``, uniform prior over
    the families); columns ``log_evidence``, ``error`` (standard error on the log scale).
    """
    comp = component_table(idata)
    fams = list(family_table(idata).index)
    rows = {}
    for f in fams:
        c = comp[comp["family"] == f]
        rows[f] = sum_with_error(c["log_evidence"].to_numpy(float), c["log_evidence_rel_error"].to_numpy(float))
    total, err = sum_with_error(comp["log_evidence"].to_numpy(float), comp["log_evidence_rel_error"].to_numpy(float))
    rows["all"] = (total - float(np.log(len(fams))), err)
    return pd.DataFrame(rows, index=["log_evidence", "error"]).T.rename_axis("family")


def family_evidence_dataset(
    families,
    probability,
    *,
    log_evidence,
    rel_error,
    r_hat,
    ess_bulk,
    ess_tail,
    method,
    thin,
    divergences,
    sampling_error=None,
) -> xr.Dataset:
    """The ``component_evidence`` group of a fit whose components are its families (the family-by-family
    engine's, and older grid fits read by :func:`ibo_pymc.engine.schema.read_fit`); ``sampling_error`` (where
    NUTS sampled an approximation of a density: :attr:`~.fitting.ComponentFit.sampling_error`) is stored
    when given."""
    log_ev = np.asarray(log_evidence, float)
    rel = np.asarray(rel_error, float)
    extra = {} if sampling_error is None else {"sampling_error": ("component", np.asarray(sampling_error, float))}
    return xr.Dataset(
        {
            "component_family": ("component", list(families)),
            "log_evidence": ("component", log_ev),
            "log_evidence_rel_error": ("component", rel),
            "probability": ("component", np.asarray(probability, float)),
            "r_hat": ("component", np.asarray(r_hat, float)),
            "ess_bulk": ("component", np.asarray(ess_bulk, float)),
            "ess_tail": ("component", np.asarray(ess_tail, float)),
            "method": ("component", list(method)),
            "thin": ("component", np.asarray(thin, np.int64)),
            "divergences": ("component", np.asarray(divergences, np.int64)),
            **extra,
            "family_log_evidence": ("family", log_ev),
            # one component per family: the family's error is the component's
            "family_log_evidence_error": ("family", rel),
            "family_probability": ("family", np.asarray(probability, float)),
        },
        coords={"component": list(families), "family": list(families)},
    )


def conditional(idata, family: str, name: str):
    """The conditional draws of parameter ``name`` given ``family`` (chain, draw): the fit schema stores a
    parameter of several families with a ``component`` dim, one family's own parameter without it."""
    da = idata["conditional_posterior"][name]
    return da.sel(component=family) if "component" in da.dims else da
