"""Tasks: what differs from one search task to another (:mod:`.base`), one package per task.

* :mod:`.hotspot` -- the hotspot task of Sandholtz et al. (2022)
* :mod:`.gridsearch` -- the spatial / conceptual grid search of Wu et al. (2020)

``get_task(name)`` returns a task object (:class:`.base.Task`); the
command-line tools' ``--task`` names one. This registry is the only place
outside a task's own package that imports it, and it does so on first use:
importing one task never pays for another's libraries (the grid task's Numba
kernels, say).
"""

from __future__ import annotations

from importlib import import_module

from ibo_pymc.tasks.base import Task

#: task name -> (module, class) of its task object
REGISTRY = {
    "hotspot": ("ibo_pymc.tasks.hotspot", "HotspotTask"),
    "gridsearch": ("ibo_pymc.tasks.gridsearch", "GridSearchTask"),
}
_made: dict[str, Task] = {}


def task_names() -> tuple[str, ...]:
    """The names ``get_task`` accepts."""
    return tuple(REGISTRY)


def get_task(name: str) -> Task:
    """The task object of ``name`` (made once per process)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(REGISTRY)}")
    if name not in _made:
        module, cls = REGISTRY[name]
        _made[name] = getattr(import_module(module), cls)()
    return _made[name]


__all__ = ["REGISTRY", "Task", "get_task", "task_names"]
