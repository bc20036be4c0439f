"""Every command takes ``--task``; an option that only another task has is a usage error (exit 2, one line),
never silently ignored; a task-dependent default is the chosen task's; ``--subject`` takes the same forms
everywhere (a number, numbers separated by commas, ``all``)."""

from __future__ import annotations

import importlib

import pytest

COMMANDS = {
    "ibo-sample": "sample",
    "ibo-compare": "compare",
    "ibo-reproduce": "reproduce",
    "ibo-plot": "plot",
    "ibo-cohort": "cohort",
    "ibo-simulate": "simulate",
    "ibo-data": "data",
}


def _parser(prog):
    return importlib.import_module(f"ibo_pymc.cli.{COMMANDS[prog]}").build_parser()


def _refused(prog, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        _parser(prog).parse_args(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "prog, argv, option",
    [
        ("ibo-sample", ["--task", "gridsearch", "--subject", "4", "--model", "tau"], "--model"),
        ("ibo-sample", ["--subject", "28", "--context", "conceptual"], "--context"),
        ("ibo-sample", ["--subject", "28", "--surrogate", "BMT"], "--surrogate"),
        ("ibo-compare", ["--task", "gridsearch", "--subject", "4", "--split", "s.csv"], "--split"),
        ("ibo-compare", ["--task", "gridsearch", "--subject", "4", "--no-refit"], "--no-refit"),
        ("ibo-compare", ["--task", "gridsearch", "--subject", "4", "--plot", "p.png"], "--plot"),
        ("ibo-compare", ["--subject", "5", "--context", "spatial"], "--context"),
        ("ibo-sample", ["--subject", "5", "--experiment", "2d"], "--experiment"),
        ("ibo-cohort", ["hierarchical", "--out", "x", "--experiment", "1d"], "--experiment"),
        ("ibo-data", ["summary", "--study", "gridsearch2018"], "--study"),
        ("ibo-cohort", ["run", "--out", "x", "--context", "spatial"], "--context"),
        ("ibo-plot", ["--task", "gridsearch", "--subject", "4", "--out", "x.png", "--model", "u"], "--model"),
        ("ibo-reproduce", ["--task", "gridsearch", "--split", "s.csv"], "--split"),
        ("ibo-reproduce", ["--task", "gridsearch", "--seed", "3"], "--seed"),
        ("ibo-cohort", ["hierarchical", "--task", "gridsearch", "--out", "x", "--split", "s.csv"], "--split"),
        ("ibo-cohort", ["hierarchical", "--out", "x", "--surrogate", "GP"], "--surrogate"),
        ("ibo-simulate", ["sbc", "--task", "gridsearch", "--model", "u"], "--model"),
        ("ibo-simulate", ["sbc", "--data", "x"], "--data"),
    ],
)
def test_another_tasks_option_is_a_usage_error(prog, argv, option, capsys):
    err = _refused(prog, argv, capsys)
    task = argv[argv.index("--task") + 1] if "--task" in argv else "hotspot"
    assert f"{option} applies to --task" in err and f"not to --task {task}" in err


@pytest.mark.parametrize(
    "prog, argv",
    [
        ("ibo-simulate", ["table3", "--task", "gridsearch"]),
    ],
)
def test_a_task_a_command_does_not_do_yet_is_refused(prog, argv, capsys):
    assert "--task gridsearch is not available in" in _refused(prog, argv, capsys)


@pytest.mark.parametrize(
    "prog, argv",
    [
        ("ibo-sample", ["--subject", "28"]),
        ("ibo-compare", ["--subject", "28"]),
        ("ibo-reproduce", []),
        ("ibo-plot", ["--subject", "28", "--out", "x.png"]),
        ("ibo-cohort", ["run", "--out", "x"]),
        ("ibo-cohort", ["hierarchical", "--out", "x"]),
        ("ibo-simulate", ["sbc"]),
        ("ibo-data", ["summary"]),
    ],
)
def test_every_command_takes_task(prog, argv):
    both = prog in ("ibo-sample", "ibo-compare", "ibo-reproduce", "ibo-data", "ibo-plot") or argv[:1] in (
        ["run"],
        ["hierarchical"],
        ["sbc"],
    )
    for task in ("hotspot",) + (("gridsearch",) if both else ()):
        head, tail = (argv[:1], argv[1:]) if prog in ("ibo-cohort", "ibo-simulate", "ibo-data") else ([], argv)
        assert _parser(prog).parse_args([*head, "--task", task, *tail]).task == task


@pytest.mark.parametrize("prog", ["ibo-sample", "ibo-compare"])
def test_task_defaults_follow_the_task(prog):
    hot = _parser(prog).parse_args(["--subject", "28"])
    grid = _parser(prog).parse_args(["--task", "gridsearch", "--subject", "4"])
    assert (hot.tune, grid.tune) == (500, 500)  # each its own configuration's (test below)
    # the grid task's --context and --experiment: not given unless given; the data decide which applies and its
    # default (GridSearchTask.where, tests/tasks/gridsearch/test_studies.py)
    assert (hot.context, grid.context, hot.experiment, grid.experiment) == (None, None, None, None)
    assert _parser(prog).parse_args(["--task", "gridsearch", "--subject", "4", "--tune", "77"]).tune == 77
    if prog == "ibo-sample":
        assert (hot.model, grid.model) == ("tau_pm", None) and (hot.surrogate, grid.surrogate) == (None, "GP")


@pytest.mark.parametrize(
    "prog, head, tail",
    [
        ("ibo-sample", [], []),
        ("ibo-compare", [], []),
        ("ibo-reproduce", [], []),
        ("ibo-plot", [], ["--out", "x.png"]),
        ("ibo-cohort", ["run"], ["--out", "x"]),
        ("ibo-cohort", ["hierarchical"], ["--out", "x"]),
    ],
)
def test_subject_forms_are_the_same_everywhere(prog, head, tail, capsys):
    def subject(text):
        return _parser(prog).parse_args([*head, "--subject", text, *tail]).subject

    assert subject("28") == [28]
    assert subject("28,5,28") == [5, 28]
    assert subject("all") == "all"
    assert subject("0") == [0]  # a participant id some tables use; checked against the data once read
    for bad in ("x", "5,,-1", "", "-3"):
        with pytest.raises(SystemExit) as exc:
            subject(bad)
        assert exc.value.code == 2
    capsys.readouterr()


def test_save_full_applies_to_one_subject(tmp_path, capsys, cogmaps_folder):
    """``ibo-sample --save-full`` keeps the posterior predictive and a float64 log-likelihood in the one fit it
    writes; for a cohort (``--subject all`` or a list) it is refused before any fit, never ignored."""
    import h5py
    import numpy as np

    from ibo_pymc.cli.sample import main

    out = tmp_path / "p4.nc"
    argv = ["--task", "gridsearch", "--subject", "4", "--data", str(cogmaps_folder), "--draws", "200"]
    assert main([*argv, "--tune", "200", "--quiet", "--save-full", "--out", str(out)]) == 0
    with h5py.File(out) as f:
        assert f["posterior_predictive/choice"].shape[:2] == (4, 200)
        assert f["log_likelihood/choices"].dtype == np.float64
    capsys.readouterr()
    rc = main(["--task", "gridsearch", "--subject", "1,4", "--data", str(cogmaps_folder), "--save-full",
               "--out", str(tmp_path / "fits")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "--save-full" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "fits").exists()


def test_the_tune_option_defaults_to_each_tasks_own_configuration():
    from ibo_pymc.cli._common import TUNE
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig
    from ibo_pymc.tasks.hotspot.model.config import FitConfig, SamplerConfig

    assert TUNE == {"hotspot": FitConfig().tune, "gridsearch": GridSearchConfig().tune}
    assert SamplerConfig().tune == FitConfig().tune == FitConfig.from_parts().tune
