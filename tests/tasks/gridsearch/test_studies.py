"""The grid task reads both of its studies, and the data decide which (issue 32, item 1): Wu et al. 2020's
cognitivemaps data have contexts (spatial, conceptual), Wu et al. 2018's experiments (1d: a line of 30 options,
2d: an 11 x 11 grid). ``--context`` and ``--experiment`` pick a part of each participant's data; the one that
does not apply to the data given is refused with one line, never ignored; without ``--data``, ``--experiment``
names the 2018 study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks import get_task
from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18
from ibo_pymc.tasks.gridsearch.studies import study_of


@pytest.fixture(scope="module")
def task():
    return get_task("gridsearch")


@pytest.fixture(scope="module")
def t2018(task, gridsearch2018_folder):
    return task.load(gridsearch2018_folder)


@pytest.fixture(scope="module")
def t2020(task, cogmaps_folder):
    return task.load(cogmaps_folder)


def test_the_folder_decides_the_study(t2018, t2020):
    assert study_of(t2018) == "gridsearch2018" and set(t2018["experiment"]) == {"1d", "2d"}
    assert study_of(t2020) == "cognitivemaps" and set(t2020["context"]) == {"spatial", "conceptual"}
    assert t2018.groupby("experiment")["subject"].nunique().to_dict() == {"1d": 81, "2d": 80}


def test_experiment_without_data_names_the_2018_study(task, gridsearch2018_folder, monkeypatch):
    monkeypatch.setenv("IBO_DATA_DIR", str(gridsearch2018_folder.parent))
    assert study_of(task.load(None, experiment="2d", progress=False)) == "gridsearch2018"
    assert study_of(task.load(None, study="gridsearch2018", progress=False)) == "gridsearch2018"
    with pytest.raises(InputError, match="--study.*gridsearch2018 study's, not cognitivemaps"):
        task.load(gridsearch2018_folder, study="cognitivemaps")


def test_where_picks_a_part_and_refuses_the_other_option(task, t2018, t2020):
    assert task.where(t2020)[1] == {"context": "spatial"}
    assert task.where(t2020, context="conceptual")[1] == {"context": "conceptual"}
    with pytest.raises(InputError, match="'--experiment'.*use --context"):
        task.where(t2020, experiment="1d")
    with pytest.raises(InputError, match="'--context'.*use --experiment"):
        task.where(t2018, context="spatial")
    with pytest.raises(InputError, match="hold experiments 1d and 2d.*name one"):
        task.where(t2018)
    line, where = task.where(t2018, experiment="1d")
    assert where == {"context": "1d"} and set(line["experiment"]) == {"1d"}
    assert task.subjects(line) == list(range(1, 82))
    # one experiment held: it is the default, and the other is refused
    assert task.where(line)[1] == {"context": "1d"}
    with pytest.raises(InputError, match="hold experiment 1d, not 2d"):
        task.where(line, experiment="2d")


def test_observations_of_each_part(task, t2018, t2020):
    """A 2018 participant's rounds through the task (every round played, padded), the same as the study module
    gives; a 2020 participant's as before (rounds 1-9 by default); the seeds of the four parts differ."""
    import numpy as np

    from ibo_pymc.tasks.gridsearch.model import GridSearchModel

    grid, where = task.where(t2018, experiment="2d")
    gr = task.observations(grid, 5, **where)
    ref = g18.grid_rounds(t2018, 5, "2d")
    assert gr.options.size == 121 and gr.choices.shape == (8, 41) and np.array_equal(gr.choices, ref.choices)
    assert task.observations(grid, 5, rounds=[1, 2], **where).choices.shape[0] == 2
    spatial = task.observations(t2020, 4)
    assert spatial.choices.shape == (9, 20) and list(spatial.rounds) == list(range(1, 10))
    parts = {
        c: GridSearchModel(task.observations(d, 4, context=c)).seed_entropy()[2]
        for c, d in (("spatial", t2020), ("conceptual", t2020), ("1d", t2018), ("2d", t2018))
    }
    assert parts == {"spatial": 0, "conceptual": 1, "1d": 2, "2d": 3}


def test_summary_verify_and_reproduce_needs_one_experiment(task, t2018, gridsearch2018_folder, cogmaps_folder):
    table = task.summary(t2018)
    assert len(table) == 161 and list(table.columns[:3]) == ["participant", "experiment", "rounds"]
    assert set(table["rounds"]) == {16, 8} and set(table["payoff"]) == {"accumulate", "best"}
    assert (table["choices"] == table["experiment"].map({"1d": 8 * 6 + 8 * 11, "2d": 4 * 21 + 4 * 41})).all()
    for folder in (gridsearch2018_folder, cogmaps_folder):
        assert task.verify(folder) == (folder, {})
    assert task.verify(gridsearch2018_folder, study="cognitivemaps")[1]  # the other study's files are missing
    with pytest.raises(InputError, match="hold experiments 1d and 2d; name one"):
        task.reproduce(t2018)


def test_cli_on_the_2018_data(gridsearch2018_folder, tmp_path, capsys):
    """``ibo-data summary`` and ``ibo-sample`` through the task: a line participant's fit (short chains) with the
    experiment in the fit's attributes and file name; the refusals are one line, exit code 2."""
    import arviz as az

    from ibo_pymc.cli.data import main as data_main
    from ibo_pymc.cli.sample import main as sample_main
    from ibo_pymc.tasks.gridsearch.generalisation import lambda_draws

    data = ["--task", "gridsearch", "--data", str(gridsearch2018_folder)]
    assert data_main(["summary", *data, "--csv", str(tmp_path / "s.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "s.csv")) == 161
    for argv, field in (
        (["--subject", "3"], "--experiment"),
        (["--subject", "3", "--context", "spatial"], "--context"),
        (["--subject", "81", "--experiment", "2d"], "--subject"),
    ):
        capsys.readouterr()
        assert sample_main([*data, *argv, "--out", str(tmp_path / "x.nc")]) == 2
        err = capsys.readouterr().err
        assert field in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.nc").exists()
    out = tmp_path / "fits"
    argv = ["--experiment", "1d", "--subject", "2", "--draws", "200", "--tune", "200", "--out", str(out / "p.nc")]
    assert sample_main([*data, *argv]) == 0
    idata = az.from_netcdf(out / "p.nc")
    assert idata.posterior.attrs["context"] == "1d" and idata.observed_data["choice"].shape == (16, 11)
    subject, part, lam = lambda_draws(out / "p.nc")  # what the generalisation table reads
    assert (subject, part) == (2, "1d") and lam.size == idata.posterior.sizes["draw"] * idata.posterior.sizes["chain"]
    assert np.array_equal(lam, idata.posterior["lambda"].values.ravel())


def test_reproduce_cli_runs_one_experiment(gridsearch2018_folder, tmp_path, capsys):
    """``ibo-reproduce --task gridsearch --experiment 1d``: the 24 models of a participant, fits.csv and folds.csv
    (16 folds each); without --experiment on data holding both, a one-line refusal and no files."""
    from ibo_pymc.cli.reproduce import main

    data = ["--task", "gridsearch", "--data", str(gridsearch2018_folder), "--subject", "4", "--workers", "1"]
    assert main([*data, "--out", str(tmp_path / "none")]) == 2
    assert "--experiment" in capsys.readouterr().err and not (tmp_path / "none").exists()
    assert main([*data, "--experiment", "1d", "--out", str(tmp_path / "r"), "--quiet"]) == 0
    fits, folds = (pd.read_csv(tmp_path / "r" / f"{n}.csv") for n in ("fits", "folds"))
    assert len(fits) == 24 and set(fits["experiment"]) == {"1d"} and len(folds) == 24 * 16
    r2 = fits.set_index("model")["R2"]
    # the line's published PMU is 1 everywhere: the plain models at chance, the local ones one local search
    assert (r2 < 1).all() and abs(r2["RBFPMU"]) < 1e-12 and abs(r2["BMTPMU"]) < 1e-12
    assert r2["LRBFPMU"] == pytest.approx(r2["LBMTPMU"], abs=1e-9) and r2["LRBFPMU"] > 0


def test_cohort_run_on_the_2018_data_writes_the_generalisation_tables(gridsearch2018_folder, tmp_path):
    """``ibo-cohort run --experiment 1d``: beside the BMS files, the generalisation tables from the GP fits
    (:mod:`ibo_pymc.tasks.gridsearch.generalisation`), one row per environment class the participants played."""
    from ibo_pymc.cli.cohort import main
    from ibo_pymc.population.selection import FILES

    out = tmp_path / "out"
    argv = ["run", "--task", "gridsearch", "--data", str(gridsearch2018_folder), "--experiment", "1d"]
    argv += ["--subject", "2", "--out", str(out), "--draws", "200", "--tune", "200", "--workers", "1", "--quiet"]
    assert main(argv) == 0
    assert all((out / name).is_file() for name in FILES.values())
    people = pd.read_csv(out / "generalisation_participants.csv")
    cohort = pd.read_csv(out / "generalisation.csv")
    env = g18.load_gridsearch2018(gridsearch2018_folder, progress=False).query("experiment == '1d' and subject == 2")
    assert list(people["participant"]) == [2] and people["environment"].iloc[0] == env["environment"].iloc[0]
    assert list(cohort["environment"]) == [env["environment"].iloc[0]] and cohort["participants"].iloc[0] == 1
    row = cohort.iloc[0]
    assert row["lo"] <= row["lambda_median"] <= row["hi"] and (cohort["experiment"] == "1d").all()
