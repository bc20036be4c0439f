"""Defects a new user met (issue 31, part 3), each with the command that showed it."""

from __future__ import annotations

import pandas as pd
import pytest


def _error(main, argv, capsys) -> str:
    """Run a command that must refuse its input: exit 2, one line on stderr, no traceback."""
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_reproduce_checks_out_before_fitting(tmp_path, capsys, raw_folder):
    """3.3: ``ibo-reproduce --out FILE`` with FILE an existing file ran all 28 fits, then failed with an
    internal FileExistsError; now a usage error (exit 2) before any work."""
    from ibo_pymc.cli.reproduce import main

    taken = tmp_path / "results"
    taken.write_text("")
    err = _error(main, ["--data", str(raw_folder), "--out", str(taken), "--workers", "1"], capsys)
    assert "exists and is not a folder" in err and "--out" in err


@pytest.mark.parametrize(
    "name, says", [("typo_rounds.csv", "no such table"), ("rounds.tsv", "neither a folder nor a table")]
)
def test_data_that_is_not_there_or_not_a_table(tmp_path, capsys, name, says):
    """3.5: a mistyped table said "data folder does not exist"; a .tsv said nothing of CSV and Parquet tables."""
    from ibo_pymc.cli.sample import main

    if name.endswith(".tsv"):
        (tmp_path / name).write_text("subject\tdelta_r1\ttheta2\n")
    err = _error(main, ["--subject", "1", "--data", str(tmp_path / name), "--out", str(tmp_path / "f.nc")], capsys)
    assert says in err and "CSV or Parquet" in err
    assert not (tmp_path / "f.nc").exists()


def test_messages_show_plain_values(tmp_path, capsys):
    """3.7: messages printed NumPy reprs (``got np.float64(4.0)``) and "(2 participants with ids 1, 4, ..., 4)"."""
    from ibo_pymc.cli._common import task_subjects
    from ibo_pymc.errors import InputError
    from ibo_pymc.tasks.hotspot.data.table import read_rounds_table

    bad = pd.DataFrame({"subject": [1, 1], "delta_r1": [0.5, 0.2], "theta2": [0.1, 4.0]})
    with pytest.raises(InputError) as info:
        read_rounds_table(bad)
    assert "(got 4.0)" in str(info.value) and "np." not in str(info.value)

    class Two:
        unit_name = "participant"

        def subjects(self, dataset):
            return [1, 4]

    with pytest.raises(InputError) as info:
        task_subjects(Two(), None, [7])
    assert "participant 7 is not in the data (2 participants with ids 1, 4)" in str(info.value)


def test_the_summary_says_when_pi_and_ucb_are_one_curve():
    """3.8: subject 28's summary printed "PI 0.455, EI 0.000, UCB 0.545" with no hint that PI with xi near 0
    and UCB with p near 0.5 are the same curve; the summary now says so when it happens, and only then."""
    from ibo_pymc.tasks.hotspot.model.report import same_curve_note

    def table(xi, p):
        return pd.DataFrame({"family": ["PI", "UCB"], "parameter": ["xi_pi", "p_ucb"], "mean": [xi, p]})

    note = same_curve_note(table(0.017, 0.5002), {"PI": 0.455, "EI": 0.0, "UCB": 0.545})
    assert note and "same curve" in note and "0.017" in note
    assert same_curve_note(table(2.3, 0.5002), {"PI": 0.455, "UCB": 0.545}) is None  # PI explores: other curves
    assert same_curve_note(table(0.017, 0.5002), {"PI": 0.999, "UCB": 0.001}) is None  # one family holds the mass


def test_reproduce_uses_the_papers_split_by_default(tmp_path, capsys, raw_folder):
    """3.1: ``ibo-reproduce --out results`` drew a seeded random split and printed other totals than the paper's,
    without a word. The paper's split ships with the package (the same rows as the copy beside the study's
    data), is the default, and the output says which split was used; --seed applies to --split random only."""
    import pandas as pd

    from ibo_pymc.cli.reproduce import build_parser, main
    from ibo_pymc.tasks.hotspot.data import load_hotspot, paper_split
    from ibo_pymc.tasks.hotspot.data.splits import PAPER_SPLIT
    from tests.conftest import PAPER_SPLITS

    shipped, shared = pd.read_csv(PAPER_SPLIT), pd.read_csv(PAPER_SPLITS)
    pd.testing.assert_frame_equal(shipped, shared)
    assert build_parser().parse_args([]).split == "paper"
    split = paper_split(load_hotspot(raw_folder))
    assert sum(len(v) for v in split.train.values()) == int((shared["set"] == "train").sum())
    err = _error(main, ["--data", str(raw_folder), "--seed", "3", "--out", str(tmp_path / "o")], capsys)
    assert "--seed" in err and "--split random" in err and not (tmp_path / "o").exists()


def test_the_papers_split_is_refused_for_other_data(tmp_path, raw_folder):
    import shutil

    from ibo_pymc.errors import InputError
    from ibo_pymc.tasks.hotspot.data import load_hotspot, paper_split

    for uid in (38, 64):
        for kind in ("eventrec", "sesrec"):
            shutil.copy(raw_folder / f"{kind}{uid}.csv", tmp_path)
    with pytest.raises(InputError, match="the paper's split does not fit this data.*--split random"):
        paper_split(load_hotspot(tmp_path))


def test_one_interval_default_for_every_task():
    """3.7: the hotspot task printed 95% HDIs and the grid task 90% ones. One default (``HDI_PROB``) for every
    summary, report, fits table, plot, region and population table, each with its option."""
    import inspect

    from ibo_pymc.engine.config import HDI_PROB
    from ibo_pymc.engine.hierarchical import HierarchicalFit, HierarchicalModel
    from ibo_pymc.engine.model import IBOModelBase
    from ibo_pymc.population.bms import BMSResult
    from ibo_pymc.population.plots import plot_bms
    from ibo_pymc.tasks.gridsearch import GridSearchTask
    from ibo_pymc.tasks.gridsearch import fits_table as grid_table
    from ibo_pymc.tasks.gridsearch import model as grid_model
    from ibo_pymc.tasks.hotspot import regions
    from ibo_pymc.tasks.hotspot.model import fit, report
    from ibo_pymc.tasks.hotspot.model.diagnostics import summary as hotspot_summary

    takes = {
        "hdi_prob": [
            IBOModelBase.summary,
            IBOModelBase.report,
            IBOModelBase.plot,
            fit.IBOModel.summary,
            fit.IBOModel.report,
            hotspot_summary,
            report.fit_report,
            grid_model.summary,
            grid_table.summary_row,
            grid_table.summary_of,
            GridSearchTask.fits_table,
        ],
        "prob": [
            regions.regions,
            regions.circular_hdi,
            regions.density_hdi,
            HierarchicalFit.population,
            HierarchicalModel.population,
            BMSResult.frequency_interval,
            plot_bms,
        ],
    }
    for name, functions in takes.items():
        for f in functions:
            assert inspect.signature(f).parameters[name].default == HDI_PROB, f.__qualname__


def test_hdi_prob_is_an_option_where_intervals_are_shown(tmp_path, capsys):
    """``ibo-sample --hdi-prob`` sets the printed summary's intervals (and the grid task's fits table); the
    hotspot task's fits table has none, so there it is refused before any fit; outside (0, 1) it is a usage
    error."""
    from ibo_pymc.cli.sample import build_parser, main

    assert build_parser().parse_args(["--subject", "28", "--hdi-prob", "0.9"]).hdi_prob == 0.9
    err = _error(main, ["--subject", "1,2", "--hdi-prob", "0.9", "--out", str(tmp_path / "fits")], capsys)
    assert "--hdi-prob" in err and "convergence-tau_pm.csv" in err
    assert not (tmp_path / "fits").exists()
    for bad in ("1.5", "0", "x"):
        with pytest.raises(SystemExit) as info:
            main(["--subject", "28", "--hdi-prob", bad])
        assert info.value.code == 2
        assert "between 0 and 1" in capsys.readouterr().err
