"""A hierarchical fit's files (any task): population table, shrinkage, Pareto k, held-out comparison, figure,
InferenceData."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

#: the files :func:`write_hierarchical` writes
HIERARCHICAL_FILES = {
    "population": "population.csv",
    "subjects": "subjects.csv",
    "heldout": "heldout.csv",
    "summary": "hierarchical_summary.json",
    "figure": "shrinkage.png",
    "idata": "hierarchical.nc",
}


def write_hierarchical(
    h, folder, *, heldout: pd.DataFrame | None = None, summary: dict | None = None, labels: dict | None = None
) -> list[Path]:
    """The hierarchical fit's files (:data:`HIERARCHICAL_FILES`), all or none: the population table, each subject's
    shrinkage with the Pareto k of its importance weights, the held-out comparison when given, the convergence
    with ``summary``, the shrinkage figure (parameters named by ``labels``) and the InferenceData."""
    from contextlib import ExitStack

    import matplotlib.pyplot as plt

    from ibo_pymc.io import atomic_path
    from ibo_pymc.population.plots import plot_shrinkage

    folder = Path(folder)
    names = {k: v for k, v in HIERARCHICAL_FILES.items() if k != "heldout" or heldout is not None}
    population, shrinkage = h.population(), h.shrinkage()
    with ExitStack() as stack:
        tmp = {k: stack.enter_context(atomic_path(folder / v)) for k, v in names.items()}
        population.to_csv(tmp["population"], index=False, float_format="%.6g")
        diag = h.idata["subject_diagnostics"].to_dataframe().reset_index()
        shrinkage.merge(diag, on="subject").to_csv(tmp["subjects"], index=False, float_format="%.6g")
        if heldout is not None:
            heldout.to_csv(tmp["heldout"], index=False, float_format="%.6g")
        tmp["summary"].write_text(json.dumps({**h.convergence(), **(summary or {})}, indent=2) + "\n")
        fig = plot_shrinkage(shrinkage, population, labels=labels)
        try:
            fig.savefig(tmp["figure"], dpi=150, bbox_inches="tight")
        finally:
            plt.close(fig)
        h.idata.to_netcdf(str(tmp["idata"]), engine="h5netcdf")
    return [folder / v for v in names.values()]
