"""Tasks: what differs from one search task to another (:mod:`.base`), one module or package per task.

* :mod:`.hotspot` -- the hotspot task of Sandholtz et al. (2022)
* :mod:`.gridsearch` -- the spatial / conceptual grid search of Wu et al. (2020)

``get_task(name)`` returns a task object (:class:`.base.Task`); the
command-line tools' ``--task`` names one.
"""

from __future__ import annotations

from ibo_pymc.tasks.base import Task
from ibo_pymc.tasks.gridsearch import GridSearchTask
from ibo_pymc.tasks.hotspot import HotspotTask

TASKS = {"hotspot": HotspotTask(), "gridsearch": GridSearchTask()}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}") from None


__all__ = ["TASKS", "GridSearchTask", "HotspotTask", "Task", "get_task"]
