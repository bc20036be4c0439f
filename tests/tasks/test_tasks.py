"""The task interface: both tasks provide what ibo_pymc.tasks.base.Task names, and the hotspot task on it
gives what the hotspot modules give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks import Task, get_task, task_names


@pytest.mark.parametrize("name", ["hotspot", "gridsearch"])
def test_every_task_provides_the_interface(name):
    task = get_task(name)
    assert isinstance(task, Task) and task.name == name
    assert len(task.families) >= 3 and {"UCB"} <= set(task.families)


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown task 'maze'"):
        get_task("maze")
    assert set(task_names()) == {"hotspot", "gridsearch"}


def test_hotspot_task_is_the_hotspot_modules(raw_folder, paper_split):
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.paper_grid import PaperGridConfig, fit_paper_grid

    task = get_task("hotspot")
    data = task.load(raw_folder)
    assert task.subjects(data) == load_hotspot(raw_folder).subjects
    obs = task.observations(data, 28)
    ref = load_hotspot(raw_folder).observations(28)
    assert np.array_equal(obs.theta2, ref.theta2) and np.array_equal(obs.delta_r1, ref.delta_r1)
    with pytest.raises(TypeError, match="no context"):
        task.observations(data, 28, context="spatial")
    # the reproduction entry point is the paper's grid method on the published split: Table 1 as committed
    import pandas as pd

    res = task.reproduce(data)  # the paper's split by default
    committed = pd.read_csv(Path(__file__).resolve().parents[2] / "models" / "reproduction" / "table1.csv")
    assert res.table1.shape == committed.shape
    assert np.allclose(
        res.table1.select_dtypes("number").to_numpy(), committed.select_dtypes("number").to_numpy(), atol=0.006
    )
    # the task's observations fit as the data module's do (the grid engine: same MAP)
    fit = fit_paper_grid(obs.delta_r1, obs.theta2, "tau_pm", config=PaperGridConfig())
    assert fit.map == fit_paper_grid(ref.delta_r1, ref.theta2, "tau_pm", config=PaperGridConfig()).map


def test_gridsearch_task_observations(cogmaps_folder):
    task = get_task("gridsearch")
    table = task.load(cogmaps_folder)
    assert len(task.subjects(table)) == 129
    gr = task.observations(table, 4, context="conceptual")
    assert gr.context == "conceptual" and gr.choices.shape == (9, 20) and gr.n_choices == 171
    assert task.observations(table, 4, context="spatial", rounds=range(1, 11)).n_rounds == 10
    with pytest.raises(InputError, match="participant|subject 2"):
        task.observations(table, 2)
