"""Log model evidence per subject, model and family, and the tables random-effects BMS reads.

Two paths give ``log p(y | model, family)`` for a subject (any task reads the first):

``bridge``
    a sampled fit's bridge-sampled evidences (:func:`ibo_pymc.engine.results.log_evidence`),
    with their Monte-Carlo standard errors, read from the fit schema alone; stored in every fit's attrs.
``fine_grid``
    the hotspot task's fine-grid quadrature of the same continuous model
    (:mod:`ibo_pymc.tasks.hotspot.population.fine_grid_evidence`).

The model-level evidence marginalises the family with the uniform prior,
``log p(y | model) = log mean_k p(y | model, k)`` (family ``all`` in the long
table). :func:`lme_table` makes the wide tables random-effects BMS reads: one
row per subject and one column per model (``level="model"``) or per model and
family (``level="family"``, columns ``MODEL:FAMILY``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.errors import InputError

#: columns of the long evidence table
COLUMNS = ("subject", "model", "family", "log_evidence", "error", "method")
#: the family label of the model-level evidence (the family marginalised)
ALL = "all"


def _rows(subject: int, model: str, le: pd.DataFrame, method: str) -> pd.DataFrame:
    df = le.reset_index()
    df.insert(0, "model", model)
    df.insert(0, "subject", int(subject))
    df["method"] = method
    return df[list(COLUMNS)]


def fit_evidence(fit) -> pd.DataFrame:
    """The long evidence rows (:data:`COLUMNS`) of one sampled fit of any task: a model (anything with an
    ``idata``), an InferenceData in the fit schema, the path of a saved fit, or a
    :class:`~ibo_pymc.io.SavedFit` (its rows, computed when it was written, without reading the file)."""
    from ibo_pymc.engine.results import log_evidence
    from ibo_pymc.io import SavedFit

    if isinstance(fit, SavedFit):
        if fit.evidence is not None:
            return fit.evidence
        fit = fit.path
    if isinstance(fit, (str, Path)):
        fit = _evidence_groups(fit)
    idata = getattr(fit, "idata", fit)
    attrs = (idata["component_evidence"] if "component_evidence" in idata.groups() else idata.posterior).attrs
    return _rows(int(attrs["subject"]), str(attrs["model"]), log_evidence(idata), "bridge")


def _evidence_groups(path):
    """The groups of a saved fit that hold its evidences, read without the draws (the whole fit, brought to
    the fit schema, for older formats)."""
    import arviz as az
    import xarray as xr

    from ibo_pymc.engine.schema import read_fit

    try:
        with xr.open_dataset(path, group="component_evidence", engine="h5netcdf") as ev:
            return az.InferenceData(component_evidence=ev.load())  # its attrs hold the fit's, as every group's do
    except (OSError, KeyError, ValueError):
        return read_fit(path)  # an older format, or not a fit: read_fit names the problem


def evidence_table(fits: Iterable, models: Sequence[str] | None = None) -> pd.DataFrame:
    """The long evidence table of many fits (each as :func:`fit_evidence` takes it), sorted by subject and
    model (in the order of ``models``, else as they first appear)."""
    rows = [fit_evidence(f) for f in fits]
    if not rows:
        return pd.DataFrame(columns=list(COLUMNS))
    df = pd.concat(rows, ignore_index=True)
    order = {m: i for i, m in enumerate(models if models is not None else dict.fromkeys(df["model"]))}
    return df.sort_values(
        ["subject", "model"], key=lambda c: c.map(order) if c.name == "model" else c, kind="stable"
    ).reset_index(drop=True)


def lme_table(evidence: pd.DataFrame, level: str = "model") -> pd.DataFrame:
    """The wide table of log evidences for BMS: index ``subject``; columns the models (``level="model"``,
    the family marginalised) or ``MODEL:FAMILY`` (``level="family"``). A subject missing any column is an error."""
    if level == "model":
        df = evidence[evidence["family"] == ALL]
        wide = df.pivot(index="subject", columns="model", values="log_evidence")
        order = list(dict.fromkeys(df["model"]))
    elif level == "family":
        df = evidence[evidence["family"] != ALL]
        key = df["model"] + ":" + df["family"]
        wide = df.assign(key=key).pivot(index="subject", columns="key", values="log_evidence")
        order = list(dict.fromkeys(key))
    else:
        raise ValueError(f"level must be 'model' or 'family', got {level!r}")
    wide = wide[order]
    missing = wide.index[wide.isna().any(axis=1)]
    if len(missing):
        raise ValueError(
            f"subjects {list(missing)} lack an evidence for some of {order}; every subject needs all of them"
        )
    wide.columns.name = None
    return wide


def partition_by(columns, part: str = "family") -> dict[str, list[str]]:
    """Partition ``MODEL:FAMILY`` columns by acquisition family (``part="family"``: any UCB, any PI, ...) or by
    model (``part="model"``: u, ũ, ũ± with any family)."""
    j = {"model": 0, "family": 1}[part]
    out: dict[str, list[str]] = {}
    for c in columns:
        pieces = str(c).split(":")
        if len(pieces) != 2:
            raise ValueError(f"column {c!r} is not MODEL:FAMILY")
        out.setdefault(pieces[j], []).append(str(c))
    return out


def read_lme(path) -> pd.DataFrame:
    """Read a table of log model evidences: a CSV with a header of model names and one row per subject.

    An optional column named ``subject`` labels the rows (else they are numbered
    from 1); every other cell must be a finite number. Bad files raise an
    :class:`~ibo_pymc.errors.InputError` naming the file, line and field.
    """
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it as a CSV text file ({type(exc).__name__})", path=path) from None
    rows = [(i + 1, r) for i, r in enumerate(rows) if any(c.strip() for c in r)]
    if not rows:
        raise InputError(
            "empty file: expected a header of model names and one row of log evidences per subject", path=path
        )
    (hline, header), body = rows[0], rows[1:]
    header = [h.strip() for h in header]
    has_subject = "subject" in header
    models = [h for h in header if h != "subject"]
    for h in header:
        if not h:
            raise InputError("empty column name in the header: expected model names", path=path, line=hline)
        if header.count(h) > 1:
            raise InputError(f"column {h!r} appears twice: expected unique model names", path=path, line=hline)
    if len(models) < 2:
        raise InputError(f"expected at least two model columns, got {models}", path=path, line=hline)
    if not body:
        raise InputError("no rows: expected one row of log evidences per subject", path=path)
    values, subjects = [], []
    for line, r in body:
        if len(r) != len(header):
            raise InputError(f"expected {len(header)} fields, got {len(r)}", path=path, line=line)
        rec = dict(zip(header, (c.strip() for c in r)))
        subjects.append(rec["subject"] if has_subject else str(len(subjects) + 1))
        vals = []
        for m in models:
            try:
                v = float(rec[m])
            except ValueError:
                raise InputError(
                    f"expected a log evidence (a number), got {rec[m]!r}", path=path, line=line, field=m
                ) from None
            if not np.isfinite(v):
                raise InputError(f"expected a finite log evidence, got {rec[m]!r}", path=path, line=line, field=m)
            vals.append(v)
        values.append(vals)
    if len(set(subjects)) != len(subjects):
        dup = next(s for s in subjects if subjects.count(s) > 1)
        raise InputError(f"subject {dup!r} appears twice: expected one row per subject", path=path, field="subject")
    return pd.DataFrame(values, index=pd.Index(subjects, name="subject"), columns=models)


def family_lme(fits: Iterable) -> pd.DataFrame:
    """One row per fit (index: its subject), one column per family: ``log p(data | family)`` of each fit
    (``component_evidence.family_log_evidence``). ``fits``: InferenceData in the fit schema, models with an
    ``idata``, or paths of saved fits. Random-effects BMS over the families of a cohort is
    ``random_effects_bms(family_lme(fits))``."""
    from ibo_pymc.engine.results import family_table
    from ibo_pymc.engine.schema import read_fit

    rows = {}
    for f in fits:
        idata = read_fit(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "idata", f)
        subject = int(idata.posterior.attrs["subject"])
        if subject in rows:
            raise ValueError(f"subject {subject} appears twice among the fits")
        rows[subject] = family_table(idata)["log_evidence"]
    return pd.DataFrame(rows).T.rename_axis("subject").sort_index()
