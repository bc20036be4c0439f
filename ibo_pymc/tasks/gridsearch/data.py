"""The grid task's data: the cognitivemaps study (Wu et al. 2020) or any tidy table of choices.

The tidy table has one row per choice:

=========== ==========================================================
subject     participant (the study's ``id``), integer
context     ``spatial`` or ``conceptual``
round       round number (1, 2, ...; the study's round 10 is its bonus round)
trial       choice number within the round, 1..n (contiguous)
x, y        the chosen option's coordinates, integers 0..7
z           the reward shown, on the study's 0-100 scale
environment optional: ``rough`` / ``smooth`` (the environment class)
env         optional: the environment's index in its class's file (0..39)
=========== ==========================================================

It is read from CSV or Parquet (:func:`read_table`) or taken as a pandas
DataFrame; bad tables are refused with one line naming the file, the line and
the field. The study's own file ``full.csv`` (one row per participant, the
choices as JSON) is turned into that table by :func:`load_cognitivemaps`; the
files are fetched from the authors' repository at a pinned commit and checked
against their SHA-256 (:func:`resolve_data_dir`).

The model sees rewards rescaled as the authors did, ``(z - 50) / 100``
(:func:`rescale`), and per (subject, context) a :class:`GridRounds`: the
option index ``8 x + y`` of every choice and the rewards, round by round.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet

SOURCE_REPOSITORY = "charleywu/cognitivemaps"
SOURCE_COMMIT = "75b6c57dbc19f98f40d9acca518e1e9a51c3fc75"
_RAW = f"https://github.com/{SOURCE_REPOSITORY}/raw/{SOURCE_COMMIT}/"
#: local name -> (pinned URL, SHA-256)
FILES = {
    "full.csv": (_RAW + "experimentData/full.csv", "13dd29261956d3d2e45558e9f60b439d8d980971e1467763105680d6690c908f"),
    "smoothEnvironment.json": (
        _RAW + "experiment/smoothEnvironment.json",
        "38b31a84e6d30570a9e83ae839813fea6b82e14b370ddb4d75455080eb907891",
    ),
    "roughEnvironment.json": (
        _RAW + "experiment/roughEnvironment.json",
        "cca528a5530a48cf49da0cf7ffbd62efbf0ae4354e9e2c586619b5e3a542b00f",
    ),
}
#: the study's folder name in IBO_DATA_DIR, on a mirror and in the cache
STUDY = "cognitivemaps"
CONTEXTS = ("spatial", "conceptual")
#: the study's JSON column of each context
_CONTEXT_COLUMN = {"spatial": "grid_experimentData", "conceptual": "gabor_experimentData"}
COLUMNS = ("subject", "context", "round", "trial", "x", "y", "z")
OPTIONAL = ("environment", "env")
#: rounds the published models are fitted to (round 10 is the bonus round)
MODEL_ROUNDS = tuple(range(1, 10))
SIDE = 8


def rescale(z):
    """Rewards as the model sees them: ``(z - 50) / 100``."""
    return (np.asarray(z, float) - 50.0) / 100.0


#: the choice index of a padded trial (after the end of a round shorter than the longest)
PAD = -1


@dataclass(frozen=True)
class GridRounds:
    """One subject's choices in one context: ``choices`` (R, T) indices into ``options`` (on the study's grid
    ``8 x + y``), ``z`` (R, T) rewards. Rounds may differ in length (Wu et al. 2018's horizons): ``lengths``
    (R,) gives each round's clicks, and the trials after them hold :data:`PAD` and NaN; None: every round has
    T."""

    subject: int
    context: str
    rounds: np.ndarray
    choices: np.ndarray
    z: np.ndarray
    environment: str | None = None
    env: np.ndarray | None = None
    #: the options the indices in ``choices`` refer to (default: the study's 8 x 8 grid)
    options: OptionSet = GRID_8X8
    lengths: np.ndarray | None = None

    def __post_init__(self):
        if self.lengths is None:
            return
        R, T = np.shape(self.choices)
        n = np.asarray(self.lengths)
        if n.shape != (R,) or not np.issubdtype(n.dtype, np.integer) or (n < 1).any() or (n > T).any():
            raise ValueError(f"lengths must be {R} whole numbers of clicks in 1..{T}")
        pad = np.arange(T)[None, :] >= n[:, None]
        if (np.asarray(self.choices)[pad] != PAD).any() or not np.isnan(np.asarray(self.z, float)[pad]).all():
            raise ValueError(f"the trials after a round's length must hold choice {PAD} and reward NaN")

    @property
    def y(self) -> np.ndarray:
        """Rescaled rewards, ``(z - 50) / 100``."""
        return rescale(self.z)

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)

    @property
    def round_lengths(self) -> np.ndarray:
        """Each round's clicks (R,)."""
        if self.lengths is None:
            return np.full(self.n_rounds, self.choices.shape[1], dtype=np.int64)
        return np.asarray(self.lengths, dtype=np.int64)

    @property
    def n_choices(self) -> int:
        """Choices the model predicts: all but each round's first."""
        return int((self.round_lengths - 1).sum())

    def select(self, rounds) -> GridRounds:
        """The rounds whose number is in ``rounds`` (in this object's order)."""
        mask = np.isin(self.rounds, list(rounds))
        return GridRounds(
            self.subject,
            self.context,
            self.rounds[mask],
            self.choices[mask],
            self.z[mask],
            self.environment,
            None if self.env is None else self.env[mask],
            self.options,
            None if self.lengths is None else np.asarray(self.lengths)[mask],
        )


# ---------------------------------------------------------------- data folder


def resolve_data_dir(data: str | Path | None = None, *, progress: bool = True) -> Path:
    """The folder holding ``full.csv`` (and the environments): ``data``, else ``IBO_DATA_DIR`` (its
    ``cognitivemaps/`` folder, or the folder itself), else the per-user cache, fetched at the pinned commit on
    first use (:mod:`ibo_pymc.data.sources`)."""
    from ibo_pymc.data.fetch import study_dir

    if os.environ.get("IBO_GRID_DATA_DIR"):  # the one convention replaced it; never ignored silently
        raise InputError(
            "IBO_GRID_DATA_DIR is no longer read; set IBO_DATA_DIR to the folder holding "
            "cognitivemaps/ (or to that folder itself)",
            field="IBO_GRID_DATA_DIR",
        )
    return study_dir(STUDY, FILES, data, expect="the folder holding the cognitivemaps full.csv", progress=progress)


def fetch(dest: str | Path | None = None, *, progress: bool = True) -> Path:
    """Download the study's files at the pinned commit into ``dest`` (default: the per-user cache), each
    checked against its SHA-256; files already there and intact are kept."""
    from ibo_pymc.data.fetch import fetch_study

    return fetch_study(STUDY, FILES, dest, progress=progress)


def load(data=None, *, progress: bool = True) -> pd.DataFrame:
    """The tidy table of choices from ``data``: a DataFrame, a CSV/Parquet table, a folder with the
    study's ``full.csv``, or None (the fetched study)."""
    if isinstance(data, pd.DataFrame):
        return read_table(data)
    if data is not None and Path(data).is_file():
        return read_table(data)
    folder = resolve_data_dir(data, progress=progress)
    if (folder / "full.csv").is_file():
        return load_cognitivemaps(folder)
    raise InputError(
        "no full.csv in this folder; expected the cognitivemaps data folder or a tidy table file",
        path=folder,
        field="--data",
    )


def load_cognitivemaps(folder: str | Path) -> pd.DataFrame:
    """The tidy table of the study's 129 participants who did both tasks (all 10 rounds)."""
    path = Path(folder) / "full.csv"
    try:
        raw = pd.read_csv(path, keep_default_na=True)
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # ParserError, EmptyDataError are ValueErrors
        raise InputError(f"cannot be read as CSV ({type(exc).__name__})", path=path) from None
    need = ["id", "environment", "grid_assignmentID", "gabor_assignmentID", *_CONTEXT_COLUMN.values()]
    for col in need:
        if col not in raw.columns:
            raise InputError("missing column; expected the cognitivemaps full.csv", path=path, field=col)
    done = raw["grid_assignmentID"].notna() & raw["gabor_assignmentID"].notna()
    done &= (raw["grid_assignmentID"].astype(str) != "NULL") & (raw["gabor_assignmentID"].astype(str) != "NULL")
    parts = []
    for row_no, row in raw[done].iterrows():
        line = int(row_no) + 2
        env_code = pd.to_numeric(pd.Series([row["environment"]]), errors="coerce").iloc[0]
        if env_code not in (0, 1):
            raise InputError(
                f"expected 0 (rough) or 1 (smooth), got {row['environment']!r}",
                path=path,
                line=line,
                field="environment",
            )
        env_class = "rough" if env_code == 0 else "smooth"
        pid = pd.to_numeric(pd.Series([row["id"]]), errors="coerce").iloc[0]
        if not (np.isfinite(pid) and pid == round(pid) and pid >= 0):
            raise InputError(f"expected a participant number, got {row['id']!r}", path=path, line=line, field="id")
        for context, col in _CONTEXT_COLUMN.items():
            try:
                rec = json.loads(row[col])
                xs, ys, zs = (np.asarray(rec[k], dtype=float) for k in ("xcollect", "ycollect", "zcollect"))
                order = np.atleast_1d(np.asarray(rec["envOrder"], dtype=int))
            except (TypeError, ValueError, KeyError, IndexError) as exc:
                raise InputError(
                    f"not the study's JSON of choices ({type(exc).__name__}: {exc})", path=path, line=line, field=col
                ) from None
            if xs.ndim != 2 or xs.shape != ys.shape or xs.shape != zs.shape or len(order) < xs.shape[0]:
                raise InputError(
                    "xcollect/ycollect/zcollect/envOrder are not rounds x trials of equal shape",
                    path=path,
                    line=line,
                    field=col,
                )
            R, T = xs.shape
            parts.append(
                pd.DataFrame(
                    {
                        "subject": int(pid),
                        "context": context,
                        "round": np.repeat(np.arange(1, R + 1), T),
                        "trial": np.tile(np.arange(1, T + 1), R),
                        "x": xs.ravel(),
                        "y": ys.ravel(),
                        "z": zs.ravel(),
                        "environment": env_class,
                        "env": np.repeat(order[:R], T),
                    }
                )
            )
    if not parts:
        raise InputError("no participant completed both tasks", path=path)
    return read_table(pd.concat(parts, ignore_index=True), source=str(path))


def read_table(table, *, source: str | None = None) -> pd.DataFrame:
    """Read and check a tidy table of choices (CSV, Parquet or DataFrame); returns it sorted and typed."""
    from ibo_pymc.data.table import TidyTable

    t = TidyTable(table, COLUMNS, OPTIONAL, source=source)
    df, bad, source = t.df, t.bad, t.source
    for col in ("subject", "round", "trial", "x", "y", "z"):
        df[col] = t.numbers(col, integer=col != "z")
    for col in ("x", "y"):
        if ((df[col] < 0) | (df[col] >= SIDE)).any():
            bad((df[col] < 0) | (df[col] >= SIDE), col, f"expected a grid coordinate 0..{SIDE - 1}")
    if (df["round"] < 1).any():
        bad(df["round"] < 1, "round", "expected a round number >= 1")
    ctx = df["context"].astype(str).str.strip().str.lower()
    if (~ctx.isin(CONTEXTS)).any():
        bad(~ctx.isin(CONTEXTS), "context", f"expected one of {', '.join(CONTEXTS)}")
    df["context"] = ctx
    if "environment" in df.columns:
        env = df["environment"].astype(str).str.strip().str.lower()
        if (~env.isin(["rough", "smooth"])).any():
            bad(~env.isin(["rough", "smooth"]), "environment", "expected rough or smooth")
        df["environment"] = env
        varies = df.groupby(["subject", "context"])["environment"].transform("nunique") > 1
        if varies.any():
            bad(varies, "environment", "expected one environment class per subject and context")
    if "env" in df.columns:
        df["env"] = t.numbers("env", integer=True)
        if (df["env"] < 0).any():
            bad(df["env"] < 0, "env", "expected an environment index >= 0")
        varies = df.groupby(["subject", "context", "round"])["env"].transform("nunique") > 1
        if varies.any():
            bad(varies, "env", "expected one environment per round")
    key = ["subject", "context", "round", "trial"]
    dup = df.duplicated(key)
    if dup.any():
        bad(dup, "trial", "the same subject, context, round and trial appears twice")
    df = df.sort_values(key, kind="stable").reset_index(drop=True)
    g = df.groupby(["subject", "context", "round"], sort=False)["trial"]
    expect = g.cumcount() + 1
    if (df["trial"] != expect).any():
        i = int(np.flatnonzero((df["trial"] != expect).to_numpy())[0])
        raise InputError(
            f"trials of a round must be 1, 2, ... without gaps (subject {df['subject'].iloc[i]}, "
            f"round {df['round'].iloc[i]}: got trial {df['trial'].iloc[i]})",
            path=source,
            field="trial",
        )
    return df


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per participant and context: rounds, choices, the mean reward of rounds 1-9 and of the bonus
    round 10 (0-100 scale), and the environment class when the table has it."""
    d = table.assign(model_round=table["round"].isin(MODEL_ROUNDS))
    g = d.groupby(["subject", "context"], sort=True)
    out = pd.DataFrame(
        {
            "rounds": g["round"].nunique(),
            "choices": g.size(),
            "mean_reward": d[d["model_round"]].groupby(["subject", "context"])["z"].mean(),
            "mean_reward_round10": d[d["round"] == 10].groupby(["subject", "context"])["z"].mean(),
        }
    )
    if "environment" in table.columns:
        out["environment"] = g["environment"].first()
    return out.reset_index().rename(columns={"subject": "participant"})


def subjects(table: pd.DataFrame) -> list[int]:
    return sorted(int(s) for s in table["subject"].unique())


def grid_rounds(table: pd.DataFrame, subject: int, context: str, rounds=MODEL_ROUNDS) -> GridRounds:
    """One subject's choices in one context, restricted to ``rounds`` (default: the model's rounds 1-9)."""
    context = str(context).lower()
    if context not in CONTEXTS:
        raise InputError(f"expected one of {', '.join(CONTEXTS)}", field="--context")
    try:
        subject = int(subject)
    except (TypeError, ValueError):
        raise InputError(f"expected a participant number, got {subject!r}", field="--subject") from None
    d = table[(table["subject"] == int(subject)) & (table["context"] == context)]
    if d.empty:
        raise InputError(f"subject {subject} has no {context} choices in the data", field="--subject")
    if rounds is not None:
        d = d[d["round"].isin(list(rounds))]
        if d.empty:
            raise InputError(
                f"subject {subject} has no {context} choices in rounds {min(rounds)}-{max(rounds)}", field="--subject"
            )
    sizes = d.groupby("round")["trial"].max()
    if sizes.nunique() != 1:
        raise InputError(
            f"subject {subject}, {context}: rounds have different numbers of trials ({sorted(sizes.unique())}); "
            "the model needs equal-length rounds",
            field="trial",
        )
    R, T = len(sizes), int(sizes.iloc[0])
    if T < 2:
        raise InputError(f"subject {subject}, {context}: rounds need at least 2 choices", field="trial")
    d = d.sort_values(["round", "trial"])
    choices = (SIDE * d["x"].to_numpy() + d["y"].to_numpy()).reshape(R, T)
    env = d["env"].to_numpy().reshape(R, T)[:, 0].astype(int) if "env" in d.columns else None  # checked in read_table
    environment = str(d["environment"].iloc[0]) if "environment" in d.columns else None
    return GridRounds(
        int(subject),
        context,
        sizes.index.to_numpy(int),
        choices.astype(np.int64),
        d["z"].to_numpy(float).reshape(R, T),
        environment,
        env,
    )


def read_environments(path, options: OptionSet, *, what: str) -> np.ndarray:
    """One file of reward environments as (environment, option) values in [0, 1], the cells placed by
    ``options.index``: a cell is ``{"x1": .., "x2": .., "y": value}`` on a grid, ``{"x": .., "y": value}`` on a
    line (the studies' JSON, keyed by environment index, then by cell). Every environment must give every
    option; ``what`` names the expected file in the error."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        out = np.full((len(raw), options.size), np.nan)
        for k in range(len(raw)):
            cells = list(raw[str(k)].values())
            grid = [("x1" in c) for c in cells]
            x = [c["x1"] if g else c["x"] for c, g in zip(cells, grid)]
            y = [c["x2"] if g else 0 for c, g in zip(cells, grid)]
            out[k, options.index(x, y)] = [float(c["y"]) for c in cells]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise InputError(f"not {what} ({type(exc).__name__})", path=path) from None
    if np.isnan(out).any():
        raise InputError(f"an environment lacks some of the {options.size} options", path=path)
    return out


def load_environments(folder: str | Path) -> dict[str, np.ndarray]:
    """The study's reward environments: class -> (40, 64) rewards on 0..1, option ``8 x + y``."""
    return {
        cls: read_environments(
            Path(folder) / f"{cls}Environment.json", GRID_8X8, what="a cognitivemaps environment file"
        )
        for cls in ("rough", "smooth")
    }
