"""The grid task's studies, and which one a data set is: the data decide.

* ``cognitivemaps`` -- Wu et al. (2020), :mod:`~ibo_pymc.tasks.gridsearch.data`: a participant's data in two
  contexts (spatial, conceptual), rounds of 20 choices on an 8 x 8 grid; also any tidy table in its layout (a
  ``context`` column).
* ``gridsearch2018`` -- Wu et al. (2018), :mod:`.gridsearch2018`: two experiments with participants numbered
  apart (1d: a line of 30 options; 2d: an 11 x 11 grid), rounds of two lengths (an ``experiment`` column).

A folder is read as the study whose files it holds (``full.csv``; ``experimentData1D.csv`` /
``experimentData2D.csv``); with no folder, the study named, else Wu et al. 2020. The functions here take either
study's table and dispatch on its layout, so that the rest of the task (the model, the cohort, the hierarchical
model) reads both through one name: a 2018 experiment stands in the place of a context, as the part of a
participant's data that one fit covers.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch import data as d2020
from ibo_pymc.tasks.gridsearch import gridsearch2018 as d2018

#: the study modules by name (the folder name of each in IBO_DATA_DIR, on a mirror and in the cache)
MODULES = {d2020.STUDY: d2020, d2018.STUDY: d2018}
STUDIES = tuple(MODULES)


def study_of(table: pd.DataFrame) -> str:
    """Which study's layout a tidy table of choices has: ``gridsearch2018`` (an ``experiment`` column) or
    ``cognitivemaps`` (a ``context`` column: Wu et al. 2020, or a user's table in its layout)."""
    return d2018.STUDY if "experiment" in table.columns else d2020.STUDY


def module(study: str):
    """The module of the study named (:data:`MODULES`); another name is refused."""
    if study not in MODULES:
        raise InputError(f"expected one of {', '.join(STUDIES)}, got {study!r}", field="--study")
    return MODULES[study]


def folder_study(folder) -> str | None:
    """The study whose participants' files the folder holds, or None."""
    p = Path(folder)
    if (p / "full.csv").is_file():
        return d2020.STUDY
    if any((p / d2018.experiment_file(e)).is_file() for e in d2018.EXPERIMENTS):
        return d2018.STUDY
    return None


def load(data=None, *, progress: bool = True, study: str | None = None) -> pd.DataFrame:
    """The tidy table of choices from ``data``: a DataFrame or a CSV/Parquet table (Wu et al. 2020's layout,
    :func:`~ibo_pymc.tasks.gridsearch.data.read_table`), a folder with one of the studies' files (the files decide
    the study), or None: the study ``study`` names (default cognitivemaps) from ``IBO_DATA_DIR`` or fetched. A
    ``study`` the data are not is refused."""
    if study is not None:
        module(study)
    if isinstance(data, pd.DataFrame) or (data is not None and Path(data).is_file()):
        table = d2020.read_table(data)
    elif data is None and study == d2018.STUDY:
        table = d2018.load_gridsearch2018(None, progress=progress)
    else:
        folder = d2020.resolve_data_dir(data, progress=progress)
        found = folder_study(folder)
        if found == d2020.STUDY:
            table = d2020.load_cognitivemaps(folder)
        elif found == d2018.STUDY:
            held = tuple(e for e in d2018.EXPERIMENTS if (folder / d2018.experiment_file(e)).is_file())
            table = d2018.load_gridsearch2018(folder, held, progress=progress)
        else:
            raise InputError(
                "neither full.csv (Wu et al. 2020) nor experimentData1D.csv / experimentData2D.csv (Wu et al. "
                "2018) in this folder; expected one of the studies' data folders or a tidy table file",
                path=folder,
                field="--data",
            )
    if study is not None and study_of(table) != study:
        raise InputError(f"the data are the {study_of(table)} study's, not {study}'s", field="--study")
    return table


def grid_rounds(table: pd.DataFrame, subject: int, context: str, rounds=None):
    """One participant's rounds in one part of the data (:class:`~ibo_pymc.tasks.gridsearch.data.GridRounds`):
    Wu et al. 2020's context (default rounds: the models' 1-9, :func:`~ibo_pymc.tasks.gridsearch.data.grid_rounds`),
    Wu et al. 2018's experiment (default: every round played, :func:`.gridsearch2018.grid_rounds`)."""
    if study_of(table) == d2018.STUDY:
        return d2018.grid_rounds(table, subject, context, rounds=rounds)
    return d2020.grid_rounds(table, subject, context, d2020.MODEL_ROUNDS if rounds is None else rounds)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per participant and part of the data (:func:`~ibo_pymc.tasks.gridsearch.data.summary`,
    :func:`.gridsearch2018.summary`)."""
    return (d2018.summary if study_of(table) == d2018.STUDY else d2020.summary)(table)
