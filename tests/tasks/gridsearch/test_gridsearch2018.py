"""Wu et al. (2018) as data: the tidy table, and what the study's documentation says about its files, checked
against the files (the shared copy's README.md: protocol summary read from the authors' R code)."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18


@pytest.fixture(scope="module")
def table(gridsearch2018_folder):
    return g18.load_gridsearch2018(gridsearch2018_folder)


def test_files_match_their_pins(gridsearch2018_folder):
    """Every pinned file's SHA-256 is the shared copy's (the copy's own SHA256SUMS agrees)."""
    sums = dict(
        reversed(line.split())
        for line in (gridsearch2018_folder / "SHA256SUMS").read_text().splitlines()
        if line.strip()
    )
    for name, (url, digest) in g18.FILES.items():
        assert hashlib.sha256((gridsearch2018_folder / name).read_bytes()).hexdigest() == digest, name
        assert sums[name] == digest and url.startswith("https://github.com/charleywu/gridsearch/raw/")
        assert any(c in url for c in (g18.SOURCE_COMMIT, g18.SMOOTH_2D_COMMIT))


def test_participants_rounds_and_horizons(table):
    """81 participants on the line (16 rounds of 5 or 10 choices), 80 on the grid (8 rounds of 20 or 40); a
    round has horizon + 1 clicks (the first revealed at random), short and long alternate from the participant's
    first horizon, and the scored choices are 120 and 240 per participant."""
    per = table.groupby(["experiment", "subject"])
    assert per.ngroups == 161
    assert table.groupby("experiment")["subject"].nunique().to_dict() == {"1d": 81, "2d": 80}
    rounds = per["round"].nunique()
    assert set(rounds["1d"]) == {16} and set(rounds["2d"]) == {8}
    r = table.groupby(["experiment", "subject", "round"]).agg(n=("trial", "size"), h=("horizon", "first"))
    assert (r["n"] == r["h"] + 1).all()
    assert set(r.loc["1d", "h"]) == {5, 10} and set(r.loc["2d", "h"]) == {20, 40}
    for (exp, _), h in r["h"].groupby(level=[0, 1]):
        h = h.to_numpy()
        assert (h[::2] != h[1::2]).all() and len(set(h[::2])) == 1, exp  # alternating
    scored = table[table["trial"] > 1].groupby(["experiment", "subject"]).size()
    assert set(scored["1d"]) == {120} and set(scored["2d"]) == {240}
    assert table[table.experiment == "1d"]["y"].eq(0).all()
    assert table["x"].between(0, 29).all() and table[table.experiment == "2d"][["x", "y"]].le(10).all().all()


def test_shown_reward_is_the_scaled_reward_rounded_half_up(table):
    """The README's 'shown = round(unscaled x scale / 100 + 5)' holds at every click with rounding half up (the
    experiment's JavaScript); rounding half to even (R's and NumPy's round) misses some."""
    v = table["z"] * table["scale"] / 100 + 5
    assert (np.floor(v + 0.5) == table["shown"]).all()
    assert (np.round(v) != table["shown"]).sum() > 0
    assert table["scale"].between(60, 80).all()


def test_rewards_come_from_the_named_environments(table, gridsearch2018_folder):
    """Unscaled rewards are 100 x the environment's value at the option plus noise of sd about 1 (|dev| <= 4.5)
    in the file of the participant's environment class, and nothing like it in the other class's file: which 2-D
    file is rough and which smooth, settled from the data."""
    for exp in g18.EXPERIMENTS:
        files = {e: g18.load_environments(gridsearch2018_folder, exp, e) for e in g18.ENVIRONMENTS}
        assert len(files["rough"]) == len(files["smooth"]) == {"1d": 40, "2d": 20}[exp]
        for env in g18.ENVIRONMENTS:
            s = table[(table.experiment == exp) & (table.environment == env)]
            for other, values in files.items():
                dev = s["z"] - 100 * values[s["env"], g18.OPTIONS[exp].index(s["x"], s["y"])]
                if other == env:
                    assert dev.std() < 1.2 and dev.abs().max() <= 4.5, (exp, env)
                else:
                    assert dev.std() > 20, (exp, env, other)


def test_one_experiment_and_the_columns(gridsearch2018_folder):
    one = g18.load_gridsearch2018(gridsearch2018_folder, experiments=("1d",))
    assert list(one.columns) == list(g18.COLUMNS) and set(one["experiment"]) == {"1d"}
    assert set(one["payoff"]) == set(g18.PAYOFFS) and set(one["environment"]) == set(g18.ENVIRONMENTS)
    with pytest.raises(InputError, match="expected one of 1d, 2d"):
        g18.load_gridsearch2018(gridsearch2018_folder, experiments=("3d",))


def _copy(src, dst, edit=None):
    dst.mkdir()
    for name in g18.FILES:
        (dst / name).write_bytes((src / name).read_bytes())
    if edit:
        path = dst / "experimentData2D.csv"
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        edit(df)
        df.to_csv(path, index=False)
    return dst


@pytest.mark.parametrize(
    "edit,field,message",
    [
        (lambda d: d.__setitem__("kernel", d["kernel"].where(d.index != 3, "2")), "kernel", "expected 0 or 1"),
        (lambda d: d.pop("envOrder"), "envOrder", "missing column"),
        (
            lambda d: d.__setitem__("searchHistory", d["searchHistory"].where(d.index != 0, "{not json")),
            "searchHistory",
            "not the study's JSON",
        ),
        (
            lambda d: d.__setitem__("scale", d["scale"].where(d.index != 1, "[60,61]")),
            "scale",
            "one value per round (8), got 2",
        ),
        (
            lambda d: d.__setitem__(
                "searchHistory", d["searchHistory"].where(d.index != 2, d["searchHistory"][2].replace("[0,", "[11,", 1))
            ),
            "searchHistory.xcollect",
            "coordinates 0..10",
        ),
    ],
)
def test_bad_files_are_one_line_errors(gridsearch2018_folder, tmp_path, edit, field, message):
    folder = _copy(gridsearch2018_folder, tmp_path / "copy", edit)
    with pytest.raises(InputError) as info:
        g18.load_gridsearch2018(folder, experiments=("2d",))
    text = str(info.value)
    assert message in text and field in text and "experimentData2D.csv" in text and "\n" not in text


def test_a_participant_as_the_models_rounds(table):
    """grid_rounds: the experiment's option set, the rounds in the order played with their horizon + 1 clicks
    (padded), the scored choices (120 on the line, 240 on the grid) and the unscaled reward the model rescales."""
    from ibo_pymc.tasks.gridsearch.data import PAD

    for exp, (P, T, n) in {"1d": (30, 11, 120), "2d": (121, 41, 240)}.items():
        gr = g18.grid_rounds(table, 5, exp)
        d = table[(table.experiment == exp) & (table.subject == 5)]
        assert gr.options.size == P and gr.choices.shape == (d["round"].nunique(), T) and gr.n_choices == n
        assert (gr.round_lengths == d.groupby("round")["horizon"].first().to_numpy() + 1).all()
        first = d[d.trial == 1].sort_values("round")
        np.testing.assert_array_equal(gr.choices[:, 0], gr.options.index(first["x"], first["y"]))
        np.testing.assert_array_equal(gr.z[:, 0], first["z"])
        assert (gr.choices == PAD).sum() == gr.choices.size - len(d) and gr.environment == d["environment"].iloc[0]
    with pytest.raises(InputError, match="participant 99 is not in the 1d"):
        g18.grid_rounds(table, 99, "1d")


def test_a_line_participant_fits_through_the_common_engine(table):
    """A 1-D participant's Bayesian fit (GP; UCB and greedy mean, short chains) through the grid task's model:
    it converges, and the families' probabilities are a distribution."""
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, GridSearchModel

    gr = g18.grid_rounds(table, 1, "1d")
    m = GridSearchModel(gr, GridSearchConfig(families=("UCB", "mean"), draws=400, tune=300, seed=1))
    m.fit(progress=False)
    probs = m.family_probabilities()
    assert probs.sum() == pytest.approx(1.0) and not m.failing()
    assert m.idata.observed_data["choice"].shape == (16, 11) and "constant_data" in m.idata.groups()
