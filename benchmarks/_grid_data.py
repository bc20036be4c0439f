"""What the grid task's benchmark scripts share: one part of a study's data."""

from __future__ import annotations

from pathlib import Path

#: the parts a benchmark may name: the 2018 study's experiments, the 2020 study's contexts
PARTS = ("1d", "2d", "spatial", "conceptual")


def study_part(data, part: str):
    """The grid task and the data of one part of a study under the folder of study folders ``data``: an
    experiment of Wu et al. 2018 (``1d``, ``2d``) or a context of Wu et al. 2020 (``spatial``, ``conceptual``)."""
    import ibo_pymc.tasks.gridsearch as G

    task = G.GridSearchTask()
    data = Path(data)
    if part in ("1d", "2d"):
        ds, _ = task.where(task.load(data / "gridsearch2018", progress=False), experiment=part)
    else:
        ds, _ = task.where(task.load(data / "cognitivemaps", progress=False), context=part)
    return task, ds
