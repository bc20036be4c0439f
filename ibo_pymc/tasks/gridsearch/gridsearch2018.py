"""Wu, Schulz, Speekenbrink, Nelson & Meder (2018), "Generalization guides human exploration in vast decision
spaces" (Nature Human Behaviour 2, 915-924), as a tidy table of choices (issue 32, the study as data).

Two experiments: a line of 30 options (``1d``: 81 participants, 16 rounds alternating 5 and 10 choices) and an
11 x 11 grid (``2d``: 80 participants, 8 rounds alternating 20 and 40 choices), in rough or smooth environments
(RBF length-scale 1 or 2), under two payoff conditions (accumulate reward, or find the best option). The
study's files are one CSV per experiment (a participant per row, the choices as JSON) and the environments
as JSON (:data:`FILES`: the authors' repository at pinned commits, each file checked against its SHA-256).

:func:`load_gridsearch2018` turns them into one row per click:

=============== ===================================================================================
subject         participant: the row number of the experiment's file (1-based; ids restart per experiment)
experiment      ``1d`` or ``2d``
round, trial    round number in the order played (1, 2, ...) and click number within it (1, 2, ...)
x, y            the option's coordinates: the arm 0..29 and y = 0 (1d); the grid cell 0..10 x 0..10 (2d)
z               the reward the models learn from: the unscaled reward (about 100 x the environment's value
                plus noise of sd about 1, so values just outside 0..100 occur); the models see (z - 50) / 100
shown           the reward shown to the participant: z x scale / 100 + 5 rounded half up (JavaScript's
                ``Math.round``; rounding half to even, as R's and NumPy's ``round``, misses 365 of the 30,856)
scale           the round's maximum shown reward (60..80)
horizon         the round's number of choices after the first click (5 or 10; 20 or 40): the first click of
                every round is an option the program revealed at random, so a round has horizon + 1 clicks
environment     ``rough`` or ``smooth``; env: the environment's index in that class's file
payoff          ``accumulate`` (maximise the average reward) or ``best`` (find the best option)
=============== ===================================================================================

What the study's documentation (``README.md`` of the shared copy) says about these files is checked against
the files themselves in the tests: the shown reward's formula at every click, the environment each reward was
drawn from (which file is rough and which smooth), the round lengths and their alternation.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch.data import PAD, GridRounds, read_environments
from ibo_pymc.tasks.gridsearch.options import OptionSet

SOURCE_REPOSITORY = "charleywu/gridsearch"
#: the commit of the participant files and of every environment file but the smooth 2-D one
SOURCE_COMMIT = "7d2e1cdcdcd7c828a9b1c0fc8881c2e531bfa942"
#: the smooth 2-D environments' commit
SMOOTH_2D_COMMIT = "4d9a34ab28504c9ccd4ba8b2d41aa533d5fce9f9"


def _raw(commit: str, path: str) -> str:
    return f"https://github.com/{SOURCE_REPOSITORY}/raw/{commit}/{path}"


#: local name -> (pinned URL, SHA-256). The rough 2-D set is the blob the shared copy's README names
#: (``experiment2D/kernel2.json`` at :data:`SOURCE_COMMIT`, later replaced by the smooth set); the hash
#: settles it, and the tests check which environments the rewards were drawn from.
FILES = {
    "experimentData1D.csv": (
        _raw(SOURCE_COMMIT, "analysis1D/ExperimentData/experimentData1D.csv"),
        "78f798c9bce4692200a756ce339d7f68783ad4bbbef660ff84e8aacae95f5759",
    ),
    "experimentData2D.csv": (
        _raw(SOURCE_COMMIT, "analysis2D/ExperimentData/experimentData2D.csv"),
        "b1397b3825d919e341636d176a89669dab6da8e4d06544f3038515be6c5d4906",
    ),
    "env1D_kernel1.json": (
        _raw(SOURCE_COMMIT, "experiment1D/kernel1.json"),
        "85b8fdad796e6baa7ab3a4d94651ab97d039d76d5c736955e3ed74e83baafca8",
    ),
    "env1D_kernel2.json": (
        _raw(SOURCE_COMMIT, "experiment1D/kernel2.json"),
        "bf77a98fb6caac3caad631d0e7e29a15f00563af71a019f9f9fad0f735289c6e",
    ),
    "env2D_kernel1.json": (
        _raw(SOURCE_COMMIT, "experiment2D/kernel2.json"),
        "f7fa1625680b061f357cc501f2da6cdf67fd84a06cf7e240fdb06634290053ca",
    ),
    "env2D_kernel2.json": (
        _raw(SMOOTH_2D_COMMIT, "experiment2D/kernel2.json"),
        "cd92ffb39afbdc24e35df46e75ec4b2277b2918bbd092bb8912cf6880f1aa93b",
    ),
}
#: the study's folder name in IBO_DATA_DIR, on a mirror and in the cache
STUDY = "gridsearch2018"
EXPERIMENTS = ("1d", "2d")
#: per experiment: the participants' file, the options' side lengths (x, y), the JSON keys of the
#: coordinates, the unscaled and the shown reward
_LAYOUT = {
    "1d": ("experimentData1D.csv", (30, 1), ("xcollect",), "ycollect", "ycollectScaled"),
    "2d": ("experimentData2D.csv", (11, 11), ("xcollect", "ycollect"), "zcollect", "zcollectScaled"),
}
#: each experiment's options: the line of 30 arms, the 11 x 11 grid
OPTIONS = {e: OptionSet.grid(*layout[1]) for e, layout in _LAYOUT.items()}
ENVIRONMENTS = ("rough", "smooth")
PAYOFFS = ("accumulate", "best")
COLUMNS = (
    "subject",
    "experiment",
    "round",
    "trial",
    "x",
    "y",
    "z",
    "shown",
    "scale",
    "horizon",
    "environment",
    "env",
    "payoff",
)


def resolve_data_dir(data: str | Path | None = None, *, progress: bool = True) -> Path:
    """The folder of the study's files: ``data``, else ``IBO_DATA_DIR`` (its ``gridsearch2018/`` folder, or the
    folder itself), else the per-user cache, fetched at the pinned commits on first use."""
    from ibo_pymc.data.fetch import study_dir

    return study_dir(STUDY, FILES, data, expect="the folder of the gridsearch2018 files", progress=progress)


def fetch(dest: str | Path | None = None, *, progress: bool = True) -> Path:
    """Download the study's files at their pinned commits into ``dest`` (default: the per-user cache), each
    checked against its SHA-256; files already there and intact are kept."""
    from ibo_pymc.data.fetch import fetch_study

    return fetch_study(STUDY, FILES, dest, progress=progress)


def experiment_file(experiment: str) -> str:
    """The participants' file of one experiment (``experimentData1D.csv``, ``experimentData2D.csv``)."""
    return _LAYOUT[experiment][0]


def environment_file(experiment: str, environment: str) -> str:
    """The file of one experiment's environments of one class (``kernel1``: rough, ``kernel2``: smooth)."""
    return f"env{experiment.upper()}_kernel{ENVIRONMENTS.index(environment) + 1}.json"


def load_environments(folder: str | Path, experiment: str, environment: str) -> np.ndarray:
    """The environments of one class: (environment, option) values in [0, 1], indexed as ``env`` and by the
    experiment's option set (:data:`OPTIONS`)."""
    path = Path(folder) / environment_file(experiment, environment)
    return read_environments(path, OPTIONS[experiment], what="the study's environments")


def load_gridsearch2018(data=None, experiments=EXPERIMENTS, *, progress: bool = True) -> pd.DataFrame:
    """The tidy table (module docstring) of the study's ``experiments`` from the folder of its files (``data``;
    None: :func:`resolve_data_dir`)."""
    folder = resolve_data_dir(data, progress=progress)
    parts = []
    for experiment in experiments:
        if experiment not in _LAYOUT:
            raise InputError(f"expected one of {', '.join(EXPERIMENTS)}, got {experiment!r}", field="experiment")
        parts.append(_read_experiment(folder, experiment))
    return pd.concat(parts, ignore_index=True)


def _read_experiment(folder: Path, experiment: str) -> pd.DataFrame:
    name, (nx, ny), coord_keys, reward_key, shown_key = _LAYOUT[experiment]
    path = folder / name
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(f"missing; expected the study's {name}", path=path) from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read as CSV ({type(exc).__name__})", path=path) from None
    for col in ("scenario", "kernel", "horizon", "scale", "envOrder", "searchHistory"):
        if col not in raw.columns:
            raise InputError("missing column; expected the study's participant file", path=path, field=col)
    parts = []
    for i, row in raw.iterrows():
        line = int(i) + 2
        codes = {}
        for col in ("scenario", "kernel", "horizon"):
            if row[col].strip() not in ("0", "1"):
                raise InputError(f"expected 0 or 1, got {row[col]!r}", path=path, line=line, field=col)
            codes[col] = int(row[col])
        try:
            hist = json.loads(row["searchHistory"])
            coords = [[np.asarray(r, dtype=float) for r in hist[k]] for k in coord_keys]
            z = [np.asarray(r, dtype=float) for r in hist[reward_key]]
            shown = [np.asarray(r, dtype=float) for r in hist[shown_key]]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"not the study's JSON of clicks ({type(exc).__name__}: {exc})",
                path=path,
                line=line,
                field="searchHistory",
            ) from None
        scale, order = (_int_list(row[c], path, line, c) for c in ("scale", "envOrder"))
        R = len(z)
        lengths = [len(r) for r in z]
        if any(len(c) != R or [len(r) for r in c] != lengths for c in (*coords, shown)) or min(lengths, default=0) < 2:
            raise InputError(
                f"{', '.join(coord_keys)}, {reward_key} and {shown_key} are not the same rounds of at least 2 clicks",
                path=path,
                line=line,
                field="searchHistory",
            )
        for field, values in (("scale", scale), ("envOrder", order)):
            if len(values) != R:
                raise InputError(
                    f"expected one value per round ({R}), got {len(values)}", path=path, line=line, field=field
                )
        xs = np.concatenate(coords[0])
        ys = np.concatenate(coords[1]) if len(coords) > 1 else np.zeros_like(xs)
        for v, n, key in ((xs, nx, coord_keys[0]), (ys, ny, coord_keys[-1])):
            if not np.all((v == np.round(v)) & (v >= 0) & (v < n)):
                raise InputError(
                    f"expected option coordinates 0..{n - 1}", path=path, line=line, field=f"searchHistory.{key}"
                )
        rounds = np.repeat(np.arange(1, R + 1), lengths)
        parts.append(
            pd.DataFrame(
                {
                    "subject": int(i) + 1,
                    "experiment": experiment,
                    "round": rounds,
                    "trial": np.concatenate([np.arange(1, n + 1) for n in lengths]),
                    "x": xs.astype(int),
                    "y": ys.astype(int),
                    "z": np.concatenate(z),
                    "shown": np.concatenate(shown),
                    "scale": np.repeat(scale, lengths),
                    "horizon": np.repeat(np.asarray(lengths) - 1, lengths),
                    "environment": ENVIRONMENTS[codes["kernel"]],
                    "env": np.repeat(order, lengths),
                    "payoff": PAYOFFS[codes["scenario"]],
                }
            )
        )
    if not parts:
        raise InputError("no participants", path=path)
    return pd.concat(parts, ignore_index=True)[list(COLUMNS)]


def _int_list(text: str, path: Path, line: int, field: str) -> np.ndarray:
    try:
        v = np.asarray(json.loads(text), dtype=float)
    except (ValueError, TypeError):
        v = np.array([np.nan])
    if v.ndim != 1 or not np.all(np.isfinite(v) & (v == np.round(v))):
        raise InputError(f"expected a JSON list of whole numbers, got {text[:40]!r}", path=path, line=line, field=field)
    return v.astype(int)


def grid_rounds(table: pd.DataFrame, subject: int, experiment: str, rounds=None) -> GridRounds:
    """One participant's rounds of one experiment as the grid task's model takes them: the experiment's option
    set, every round in the order played (or those of ``rounds``) padded to the longest (its ``lengths``:
    horizon + 1 clicks), the unscaled reward ``z`` (the model sees (z - 50) / 100, as the authors' models did),
    the environment class and each round's environment."""
    if experiment not in OPTIONS:
        raise InputError(f"expected one of {', '.join(EXPERIMENTS)}, got {experiment!r}", field="--experiment")
    d = table[(table["experiment"] == experiment) & (table["subject"] == int(subject))]
    if d.empty:
        raise InputError(f"participant {subject} is not in the {experiment} experiment's data", field="--subject")
    if rounds is not None:
        d = d[d["round"].isin(list(rounds))]
        if d.empty:
            raise InputError(f"participant {subject} has none of rounds {list(rounds)} in {experiment}", field="round")
    options = OPTIONS[experiment]
    rounds = np.sort(d["round"].unique())
    lengths = d.groupby("round")["trial"].max().loc[rounds].to_numpy(dtype=np.int64)
    T = int(lengths.max())
    choices = np.full((len(rounds), T), PAD, dtype=np.int64)
    z = np.full((len(rounds), T), np.nan)
    r = np.searchsorted(rounds, d["round"].to_numpy())
    t = d["trial"].to_numpy() - 1
    choices[r, t] = options.index(d["x"].to_numpy(), d["y"].to_numpy())
    z[r, t] = d["z"].to_numpy(dtype=float)
    env = d.groupby("round")["env"].first().loc[rounds].to_numpy()
    return GridRounds(
        int(subject),
        experiment,
        rounds,
        choices,
        z,
        str(d["environment"].iloc[0]),
        env,
        options,
        lengths if (lengths != T).any() else None,
    )


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per participant and experiment: rounds, clicks, the mean reward (``z``, about 0-100) after the
    random first click of each round, the environment class and the payoff condition."""
    chosen = table[table["trial"] > 1]
    key = ["subject", "experiment"]
    g = table.groupby(key, sort=True)
    out = pd.DataFrame(
        {
            "rounds": g["round"].nunique(),
            "choices": g.size(),
            "mean_reward": chosen.groupby(key)["z"].mean(),
            "environment": g["environment"].first(),
            "payoff": g["payoff"].first(),
        }
    )
    return out.reset_index().sort_values(["experiment", "subject"]).rename(columns={"subject": "participant"})
