"""The engine's hierarchical model on the grid task: through the model class and through ``ibo-cohort``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

SHORT = {"draws": 300, "tune": 200, "chains": 2}


@pytest.mark.slow
def test_hierarchical_switch_on_the_grid_model(choices):
    """``GridSearchModel([...], hierarchical=True)``: every participant fitted alone, then the population of lambda,
    tau, UCB's beta and the family mix; the shrunken posteriors stay inside the participants' own ranges."""
    from ibo_pymc import GridSearchModel
    from ibo_pymc.engine.hierarchical import HierarchicalModel
    from ibo_pymc.tasks.gridsearch.data import grid_rounds

    obs = [grid_rounds(choices, s, "spatial") for s in (1, 4, 6)]
    h = GridSearchModel(obs, hierarchical=True, population_draws=300, population_tune=300, population_chains=2, **SHORT)
    assert isinstance(h, HierarchicalModel) and h.config.draws == 300
    idata = h.fit()
    assert list(idata.posterior["shape_family"].values) == ["UCB"]
    assert list(idata.posterior["parameter"].values) == ["lambda", "tau"]
    pop = h.population()
    assert pop.query("quantity == 'family_frequency'")["mean"].sum() == pytest.approx(1, abs=1e-6)
    shrink = h.shrinkage()
    assert set(shrink["parameter"]) == {"lambda", "tau"} and len(shrink) == 6
    for s, m in zip((1, 4, 6), h.models):
        own = m.idata.posterior["lambda"].values
        shrunk = idata["subject_posterior"]["lambda"].sel(subject=s).values
        assert own.min() <= np.median(shrunk) <= own.max()


@pytest.mark.slow
def test_cohort_hierarchical_cli(cogmaps_folder, tmp_path):
    from ibo_pymc.cli.cohort import main
    from ibo_pymc.population.hierarchical_files import HIERARCHICAL_FILES

    out = tmp_path / "out"
    argv = [
        "hierarchical",
        "--task",
        "gridsearch",
        "--data",
        str(cogmaps_folder),
        "--context",
        "conceptual",
        "--subject",
        "1,4",
        "--draws",
        "300",
        "--tune",
        "200",
        "--chains",
        "2",
        "--population-draws",
        "300",
        "--out",
        str(out),
        "--workers",
        "1",
        "--quiet",
    ]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir() if p.is_file()} == set(HIERARCHICAL_FILES.values()) - {"heldout.csv"}
    subjects = pd.read_csv(out / HIERARCHICAL_FILES["subjects"])
    assert list(subjects["subject"].unique()) == [1, 4] and set(subjects["parameter"]) == {"lambda", "tau"}
    assert json.loads((out / HIERARCHICAL_FILES["summary"]).read_text())["subjects"] == 2
    assert main(argv) == 0  # the participants' saved fits are reused
