"""The grid task's data: the study's file -> the tidy table -> per-participant rounds; tidy tables of users."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch import data as D


def test_pinned_hashes_match_the_shared_copy(cogmaps_folder):
    sums = dict(line.split()[::-1] for line in (cogmaps_folder / "SHA256SUMS").read_text().splitlines() if line.strip())
    for name, (url, digest) in D.FILES.items():
        assert sums[name] == digest
        assert D.SOURCE_COMMIT in url
        assert hashlib.sha256((cogmaps_folder / name).read_bytes()).hexdigest() == digest


def test_study_table(choices):
    assert choices["subject"].nunique() == 129
    per = choices.groupby(["subject", "context"]).agg(rounds=("round", "nunique"), n=("trial", "size"))
    assert len(per) == 258 and (per["rounds"] == 10).all() and (per["n"] == 200).all()
    assert set(choices["context"]) == {"spatial", "conceptual"}
    assert choices["x"].between(0, 7).all() and choices["y"].between(0, 7).all()
    # participant 1's first spatial choices as logged (grid_experimentData xcollect/ycollect/zcollect)
    first = choices[(choices.subject == 1) & (choices.context == "spatial") & (choices["round"] == 1)]
    assert first["x"].tolist()[:5] == [6, 4, 0, 5, 7]
    assert first["y"].tolist()[:5] == [5, 2, 4, 5, 0]
    assert first["z"].tolist()[:5] == [62, 39, 1, 47, 94]


def test_option_index_matches_the_environments(choices, environments):
    """Option 8 x + y of the environment file given by envOrder is what was rewarded (noise sd ~2 on 0..100);
    with x and y swapped the rewards do not match."""
    d = choices[choices["round"] <= 9]
    res, swapped = [], []
    for (_, _), g in d.groupby(["subject", "context"]):
        env = environments[g["environment"].iloc[0]][g["env"].to_numpy()]
        res.append(g["z"].to_numpy() - 100 * env[np.arange(len(g)), (8 * g.x + g.y).to_numpy()])
        swapped.append(g["z"].to_numpy() - 100 * env[np.arange(len(g)), (8 * g.y + g.x).to_numpy()])
    assert np.std(np.concatenate(res)) < 2.5
    assert np.std(np.concatenate(swapped)) > 10


def test_grid_rounds(choices):
    gr = D.grid_rounds(choices, 1, "conceptual")
    assert gr.choices.shape == (9, 20) and gr.n_choices == 171
    assert list(gr.rounds) == list(range(1, 10))
    assert np.allclose(gr.y, (gr.z - 50) / 100)
    with pytest.raises(InputError, match="no spatial choices"):
        D.grid_rounds(choices, 2, "spatial")


def test_tidy_table_round_trip(choices, tmp_path):
    from ibo_pymc.tasks.gridsearch.simulate import to_table

    gr = D.grid_rounds(choices, 4, "spatial")
    t = to_table([gr])
    for path in (tmp_path / "c.csv", tmp_path / "c.parquet"):
        (t.to_csv(path, index=False) if path.suffix == ".csv" else t.to_parquet(path))
        back = D.grid_rounds(D.load(path), 4, "spatial")
        assert np.array_equal(back.choices, gr.choices) and np.array_equal(back.z, gr.z)
    back = D.grid_rounds(D.load(t.sample(frac=1.0, random_state=1)), 4, "SPATIAL")  # any row order, any case
    assert np.array_equal(back.choices, gr.choices)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t.drop(columns="z"), "z"),
        (lambda t: t.assign(x=t["x"].where(t.index != 3, 9)), "x"),
        (lambda t: t.assign(context="spatail"), "context"),
        (lambda t: t.assign(z=t["z"].where(t.index != 2, np.nan)), "z"),
        (lambda t: pd.concat([t, t.iloc[[0]]]), "trial"),
        (lambda t: t.assign(env=t["env"].astype(object).where(t.index != 5, "eleven")), "env"),
        (lambda t: t.assign(env=t["env"].where(t.index != 5, 3)), "env"),
        (lambda t: t.assign(environment=t["environment"].where(t.index != 5, "smooth")), "environment"),
    ],
)
def test_bad_tables(choices, edit, field):
    t = choices[choices.subject == 1].head(40).reset_index(drop=True)
    with pytest.raises(InputError) as exc:
        D.read_table(edit(t))
    assert f"field '{field}'" in str(exc.value) and "\n" not in str(exc.value)


def test_resolve_data_dir(tmp_path, monkeypatch, cogmaps_folder):
    monkeypatch.setenv("IBO_DATA_DIR", str(cogmaps_folder))
    assert D.resolve_data_dir() == cogmaps_folder
    with pytest.raises(InputError, match="not an existing folder"):
        D.resolve_data_dir(tmp_path / "nope")
    with pytest.raises(InputError, match="no full.csv"):
        D.load(tmp_path)


def test_ibo_data_task_gridsearch(cogmaps_folder, tmp_path, capsys):
    """``ibo-data ... --task gridsearch``: verify the pinned files, the tidy table, the per-participant summary."""
    import pandas as pd

    from ibo_pymc.cli.data import main

    assert main(["verify", "--task", "gridsearch", "--data", str(cogmaps_folder)]) == 0
    assert "all pinned files present and intact" in capsys.readouterr().out
    obs = tmp_path / "choices.csv"
    assert main(["observations", "--task", "gridsearch", "--data", str(cogmaps_folder), "--csv", str(obs)]) == 0
    table = pd.read_csv(obs)
    assert len(table) == 129 * 2 * 10 * 20 and list(table.columns[:7]) == [
        "subject",
        "context",
        "round",
        "trial",
        "x",
        "y",
        "z",
    ]
    summ = tmp_path / "summary.csv"
    assert main(["summary", "--task", "gridsearch", "--data", str(cogmaps_folder), "--csv", str(summ)]) == 0
    s = pd.read_csv(summ)
    assert len(s) == 258 and (s["rounds"] == 10).all() and (s["choices"] == 200).all()
    # the summary's mean reward is the table's own
    one = table[(table.subject == 4) & (table.context == "spatial") & (table["round"] <= 9)]["z"].mean()
    assert s.set_index(["participant", "context"]).loc[(4, "spatial"), "mean_reward"] == pytest.approx(one)
    capsys.readouterr()
    # a folder without the study's files: exit 2, one line naming the missing file
    assert main(["verify", "--task", "gridsearch", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "full.csv" in err and "missing" in err


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda raw: raw.iloc[:0], None),  # header only: no participant
        (lambda raw: raw.assign(environment="x"), "environment"),
        (lambda raw: raw.assign(id="abc"), "id"),
        (lambda raw: raw.assign(grid_experimentData='{"xcollect": 3}'), "grid_experimentData"),
        (
            lambda raw: raw.assign(
                grid_experimentData=raw["grid_experimentData"].str.replace(
                    '"envOrder":[', '"envOrder":7,"x":[', regex=False
                )
            ),
            "grid_experimentData",
        ),
    ],
)
def test_bad_study_file(cogmaps_folder, tmp_path, edit, field):
    """A damaged full.csv gets one line naming the file (and the line and field where there is one)."""
    raw = pd.read_csv(cogmaps_folder / "full.csv")
    done = raw[raw["grid_assignmentID"].notna() & raw["gabor_assignmentID"].notna()].head(2)
    edit(done).to_csv(tmp_path / "full.csv", index=False)
    with pytest.raises(InputError) as exc:
        D.load_cognitivemaps(tmp_path)
    msg = str(exc.value)
    assert "full.csv" in msg and "\n" not in msg and (field is None or f"field '{field}'" in msg), msg
    (tmp_path / "full.csv").write_text("")
    with pytest.raises(InputError, match="cannot be read"):
        D.load_cognitivemaps(tmp_path)


def test_fetch_pinned_over_loopback(cogmaps_folder, tmp_path, monkeypatch):
    """The study's files fetched from a (loopback) mirror at their pinned hashes into the per-user cache, reused
    there; a mirror serving another full.csv is refused and nothing damaged is kept."""
    import functools
    import http.server
    import shutil
    import threading

    from ibo_pymc.data.fetch import DataIntegrityError

    root = tmp_path / "mirror"
    shutil.copytree(cogmaps_folder, root)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        monkeypatch.setattr(D, "FILES", {n: (base + n, h) for n, (_, h) in D.FILES.items()})
        monkeypatch.setenv("IBO_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.delenv("IBO_DATA_DIR", raising=False)
        folder = D.resolve_data_dir(progress=False)
        assert folder == tmp_path / "cache" / "cognitivemaps"
        assert sorted(p.name for p in folder.iterdir()) == sorted(D.FILES)
        assert len(D.load(None, progress=False)["subject"].unique()) == 129
        (root / "full.csv").write_text("id\n1\n")
        with pytest.raises(DataIntegrityError, match="pinned SHA-256"):
            D.fetch(tmp_path / "other", progress=False)
        assert not (tmp_path / "other" / "full.csv").exists()
    finally:
        server.shutdown()
        server.server_close()
