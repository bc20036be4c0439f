"""The data layer: derived quantities on hand-made logs, the real cohort, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.data import load_hotspot, read_raw_logs
from tests.logmaker import make_cohort


@pytest.fixture()
def tiny(tmp_path):
    return make_cohort(tmp_path / "raw")


def test_derived_quantities_known_answers(tiny):
    d = load_hotspot(tiny)
    assert d.subjects == [1, 2]
    r = d.rounds
    # 24 rounds each: 20 burn-in, one reachable (the last), 3 eligible
    assert len(r) == 48
    assert r.groupby("subject")["eligible"].sum().tolist() == [3, 3]
    assert (r["round_index"].groupby(r["subject"]).max() == 24).all()
    assert r.loc[r["round_index"] == 24, "reachable"].all()
    assert not r.loc[r["round_index"] < 24, "reachable"].any()
    assert np.allclose(r["max_reach"], 80.0)
    assert np.allclose(r.loc[r["round_index"] < 24, "target_dist"], 300.0)
    obs = d.observations(1)
    assert obs.round_index.tolist() == [21, 22, 23]
    # move 1 goes 20 px straight at a target 300 px away: score change = 20 (k = 1)
    assert np.allclose(obs.delta_r1, 20.0, atol=1e-5)
    # the turns alternate +0.5 / -0.5 by round (round_index r has turn 0.5 * (-1)^(r-1));
    # positive is clockwise on screen because screen y points down
    assert np.allclose(obs.theta2, [0.5, -0.5, 0.5], atol=1e-6)
    # move 2 score change: distance to the target shrinks from 280 to |m2 - target|
    m2 = np.array([20 + 20 * np.cos(0.5), 20 * np.sin(0.5)])
    expected_dr2 = 280 - np.hypot(*(m2 - [300, 0]))
    s = d.summary()
    assert s["n_rounds"].tolist() == [3, 3]
    assert np.allclose(s["mean_dr2"], expected_dr2, atol=1e-4)
    # each round continues straight: the total is d(move 1) - d(last move)
    assert (s["mean_total"] > s["mean_dr2"]).all()
    ex = d.exclusion_counts()
    assert ex[["logged", "burn_in", "reachable", "eligible"]].sum().tolist() == [48, 40, 2, 6]
    ds = obs.to_xarray()
    assert ds.sizes["round"] == 3 and set(ds.data_vars) >= {"delta_r1", "theta2"}


def test_theta2_wrap_interval(tiny):
    d = load_hotspot(tiny)
    t = d.rounds["theta2"].to_numpy()
    assert (t > -np.pi).all() and (t <= np.pi).all()


def test_real_cohort_counts_and_table2(hotspot):
    s = hotspot.summary()
    assert len(s) == 28
    assert s["n_rounds"].sum() == 9569
    assert s.loc[s.subject == 1, "n_rounds"].item() == 452
    # paper Table 2, columns 6-8 (printed precision)
    paper = {1: (7.84, 9.14, 53.33), 6: (0.12, 13.79, 61.17), 21: (6.19, 15.16, 66.54), 28: (6.99, 14.37, 70.59)}
    for subj, vals in paper.items():
        row = s[s.subject == subj].iloc[0]
        got = tuple(round(float(row[c]), 2) for c in ("mean_dr2", "mean_dr3", "mean_total"))
        assert got == vals, subj
    assert s["user_id"].tolist() == sorted(s["user_id"].tolist())


def test_loading_some_subjects_reads_only_theirs(hotspot, raw_folder, monkeypatch):
    """``subjects=``: only those subjects' two files are read, their numbers and rounds are those of the whole
    folder; a subject the folder lacks makes the whole folder read, so the data set says what there is."""
    import ibo_pymc.tasks.hotspot.data.raw as raw

    read = []
    real = raw.read_participant
    monkeypatch.setattr(raw, "read_participant", lambda ev, ses, uid: read.append(uid) or real(ev, ses, uid))
    part = load_hotspot(raw_folder, subjects=[28, 3])
    assert part.subjects == [3, 28] and len(read) == 2
    for s in (3, 28):
        a, b = part.observations(s), hotspot.observations(s)
        assert a.user_id == b.user_id
        np.testing.assert_array_equal(a.session_id, b.session_id)
        np.testing.assert_array_equal(a.round_index, b.round_index)
        np.testing.assert_array_equal(a.theta2, b.theta2)
    read.clear()
    assert load_hotspot(raw_folder, subjects=[28, 29]).subjects == list(range(1, 29)) and len(read) == 28


def test_observations_frame_contract(hotspot):
    f = hotspot.observations_frame()
    assert list(f.columns) == ["subject", "user_id", "session_id", "round_index", "delta_r1", "theta2"]
    assert len(f) == 9569
    assert f["theta2"].between(-np.pi, np.pi, inclusive="right").all()
    assert (f["round_index"] > 20).all()


# ---- bad input ---------------------------------------------------------------


def _lines(path):
    return path.read_text().splitlines()


def _put(path, lines):
    path.write_text("\n".join(lines) + "\n")


def _mutate_event_field(folder, line_no, col, value):
    p = folder / "eventrec70.csv"
    lines = _lines(p)
    parts = lines[line_no - 1].split(",")
    parts[col] = value
    lines[line_no - 1] = ",".join(parts)
    _put(p, lines)


BAD_CASES = {
    "missing session file": (lambda f: (f / "sesrec70.csv").unlink(), "sesrec70.csv"),
    "missing event file": (lambda f: (f / "eventrec71.csv").unlink(), "eventrec71.csv"),
    "empty event file": (lambda f: (f / "eventrec70.csv").write_text(""), "empty file"),
    "wrong column count": (lambda f: _mutate_event_field(f, 5, 3, "1,2"), "expected 12 comma-separated fields"),
    "non-numeric field": (lambda f: _mutate_event_field(f, 7, 6, "abc"), "field 'score'"),
    "NaN field": (lambda f: _mutate_event_field(f, 7, 4, "NaN"), "field 'x_loc'"),
    "duplicated event id": (lambda f: _mutate_event_field(f, 2, 0, "1"), "duplicated event id"),
    "unknown session id": (lambda f: _mutate_event_field(f, 3, 1, "99999"), "not in sesrec70.csv"),
    "too few moves": (
        lambda f: (
            _put(
                f / "eventrec70.csv",
                [ln for ln in _lines(f / "eventrec70.csv") if ln.split(",")[1] != "5000" or ln.split(",")[2] in "12"],
            ),
            _put(
                f / "sesrec70.csv",
                [
                    ln if not ln.startswith("5000,") else ln.rsplit(",", 1)[0] + ",2"
                    for ln in _lines(f / "sesrec70.csv")
                ],
            ),
        ),
        "needs at least 3",
    ),
    "duplicated session id": (
        lambda f: _put(f / "sesrec70.csv", _lines(f / "sesrec70.csv") + [_lines(f / "sesrec70.csv")[0]]),
        "duplicated session id",
    ),
    "header row": (
        lambda f: _put(f / "sesrec71.csv", ["session_id,user_id,a,b,c,d,e,f"] + _lines(f / "sesrec71.csv")),
        "header",
    ),
    "empty folder": (lambda f: [p.unlink() for p in f.iterdir()], "no eventrec"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_is_a_clear_error(tiny, case):
    mutate, expected = BAD_CASES[case]
    mutate(tiny)
    with pytest.raises(InputError) as info:
        load_hotspot(tiny)
    msg = str(info.value)
    assert expected in msg
    assert "\n" not in msg


def test_cli_bad_input_exit_2_no_traceback_no_output(tiny, tmp_path):
    _mutate_event_field(tiny, 7, 6, "abc")
    out = tmp_path / "obs.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "ibo_pymc.cli.data", "observations", "--data", str(tiny), "--csv", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "eventrec70.csv:7: field 'score'" in proc.stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".obs.csv.tmp-*"))


def test_crlf_and_bom_accepted(tiny):
    p = tiny / "eventrec70.csv"
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    a = read_raw_logs(tiny)
    assert len(a.events) > 0
