"""Bring your own data, hotspot task: a tidy table of rounds gives what the raw logs give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.data import load_hotspot
from ibo_pymc.tasks.hotspot.data.table import read_rounds_table
from ibo_pymc.tasks.hotspot.datasets import load_data


@pytest.fixture(scope="module")
def raw(raw_folder):
    return load_hotspot(raw_folder)


def test_round_trip_through_csv_and_parquet(raw, raw_folder, tmp_path):
    """``ibo-data observations --csv``'s table read back (issue 31, 3.4: it was written to 10 digits, and the
    README's "the same fits" did not hold): every subject's rounds, in order, with their session ids, equal to
    the last bit; the grid engine's fit of subject 28 is the raw logs' fit."""
    from ibo_pymc.cli.data import main
    from ibo_pymc.tasks.hotspot.paper_grid import PaperGridConfig, fit_paper_grid

    frame = raw.observations_frame()
    assert main(["observations", "--data", str(raw_folder), "--csv", str(tmp_path / "obs.csv")]) == 0
    frame.to_parquet(tmp_path / "obs.parquet")
    for source in (
        tmp_path / "obs.csv",
        tmp_path / "obs.parquet",
        frame[["subject", "delta_r1", "theta2", "session_id"]],
    ):
        data = load_data(source)
        assert data.subjects == raw.subjects
        for s in (1, 14, 28):
            a, b = raw.observations(s), data.observations(s)
            assert np.array_equal(a.delta_r1, b.delta_r1) and np.array_equal(a.theta2, b.theta2)
            assert np.array_equal(a.session_id, b.session_id)
    a, b = raw.observations(28), load_data(tmp_path / "obs.csv").observations(28)
    fa = fit_paper_grid(a.delta_r1, a.theta2, "tau_pm", config=PaperGridConfig())
    fb = fit_paper_grid(b.delta_r1, b.theta2, "tau_pm", config=PaperGridConfig())
    assert fa.map == fb.map and fa.w_em == fb.w_em


def test_sessions_default_to_the_row_order():
    t = pd.DataFrame({"subject": [2, 1, 2], "delta_r1": [1.0, -2.0, 0.5], "theta2": [0.1, 0.2, -0.3]})
    d = read_rounds_table(t)
    assert d.subjects == [1, 2]
    assert list(d.observations(2).session_id) == [1, 2] and list(d.observations(2).delta_r1) == [1.0, 0.5]


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t.drop(columns="theta2"), "theta2"),
        (lambda t: t.assign(theta2=[0.1, 4.0, 0.2]), "theta2"),
        (lambda t: t.assign(subject=[1, 1.5, 2]), "subject"),
        (lambda t: t.assign(delta_r1=[1.0, np.inf, 2.0]), "delta_r1"),
        (lambda t: t.assign(session=[5, 5, 6]), "session"),
    ],
)
def test_bad_tables(edit, field):
    t = pd.DataFrame({"subject": [1, 1, 2], "delta_r1": [1.0, -2.0, 0.5], "theta2": [0.1, 0.2, -0.3]})
    with pytest.raises(InputError) as exc:
        read_rounds_table(edit(t))
    assert f"field '{field}'" in str(exc.value) and "\n" not in str(exc.value)
