"""The hotspot task's second evidence path: the fine-grid quadrature of the continuous model.

``fine_grid`` rows (:func:`grid_evidence`) give ``log p(theta2 | model, family)`` by the fine grid of
:mod:`ibo_pymc.tasks.hotspot.model.fine_grid`; its error is estimated by computing it again with 1.5 times
the points in every dimension (the difference). :func:`check_evidence` sets it beside a fit's
bridge-sampled evidence (:func:`ibo_pymc.population.evidence.fit_evidence`).

The paper's grid engine (:mod:`ibo_pymc.tasks.hotspot.paper_grid.engine`) fixes the mixture
weight w by EM on the data and puts the prior on the table nodes, so its grid
sum is not the marginal likelihood of the model that is compared here; it
has no evidence path.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ibo_pymc.population.evidence import _rows, fit_evidence


def grid_evidence(obs, model: str, *, tables=None, refine: float | None = 1.5, **kw) -> pd.DataFrame:
    """The long evidence rows of a subject's observations under ``model`` by the fine grid; with ``refine``
    the error column is the change when every dimension gets ``refine`` times the points (and the shape
    parameter ``refine`` times the points per table interval)."""
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.model.builder import SubjectData
    from ibo_pymc.tasks.hotspot.model.fine_grid import (
        DEFAULT_POINTS,
        fine_grid_posterior,
    )

    sd = SubjectData.prepare(obs, model, tables or load_tables())
    points = {**DEFAULT_POINTS, **(kw.pop("points", None) or {})}
    per_node = kw.pop("per_node", 4)
    le = fine_grid_posterior(sd, points=points, per_node=per_node, **kw).log_evidence()
    if refine:
        finer = fine_grid_posterior(
            sd,
            points={k: int(math.ceil(v * refine)) for k, v in points.items()},
            per_node=int(math.ceil(per_node * refine)),
            **kw,
        ).log_evidence()
        le = finer.assign(error=(finer["log_evidence"] - le["log_evidence"]).abs())
    return _rows(obs.subject, model, le, "fine_grid")


def check_evidence(
    obs, model: str, config=None, *, tables=None, refine: float = 1.5, cores: int | None = 1
) -> pd.DataFrame:
    """Both paths for one subject and model: fit (``config``, default
    :class:`~ibo_pymc.tasks.hotspot.model.config.FitConfig`),
    its bridge-sampled evidences, and the fine grid's. One row per family and ``all`` with ``bridge``,
    ``bridge_error``, ``grid``, ``grid_error``, ``difference`` and ``z`` = difference / the two errors combined."""
    from ibo_pymc.tasks.hotspot.model.config import FitConfig
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    config = (config or FitConfig()).replace(model=model)
    m = IBOModel(obs, config=config)
    m.fit(progress=False, cores=cores)
    b = fit_evidence(m).set_index("family")
    g = grid_evidence(obs, model, tables=tables or m.tables, refine=refine).set_index("family")
    out = pd.DataFrame(
        {
            "subject": int(obs.subject),
            "model": model,
            "bridge": b["log_evidence"],
            "bridge_error": b["error"],
            "grid": g["log_evidence"],
            "grid_error": g["error"],
        }
    )
    out["difference"] = out["bridge"] - out["grid"]
    out["z"] = out["difference"] / np.hypot(out["bridge_error"], out["grid_error"])
    return out.reset_index()
