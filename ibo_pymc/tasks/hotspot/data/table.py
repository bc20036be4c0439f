"""Bring your own data (hotspot task): a tidy table with one row per round.

=========== =======================================================================
subject     subject number (integer >= 1)
delta_r1    score change of move 1 (points; its sign selects tau^- or tau^+)
theta2      the turn from the move-1 to the move-2 direction, radians in (-pi, pi]
session     optional: a round identifier (unique per subject; splits refer to it); ``session_id``,
            as ``ibo-data observations`` writes it, is read as ``session``
=========== =======================================================================

Read from CSV or Parquet, or taken as a pandas DataFrame, and turned into the
same :class:`~ibo_pymc.tasks.hotspot.data.rounds.HotspotData` the raw logs give (every row
an eligible round: the exclusions are the raw logs' business; the task
performance columns of Table 2 are then missing). Bad tables get one-line
errors naming the file, the line and the field.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.data.table import TidyTable, is_table
from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.data.rounds import HotspotData

COLUMNS = ("subject", "delta_r1", "theta2")
OPTIONAL = ("session",)


def _refuse_raw_log(source: str) -> None:
    if re.fullmatch(r"(eventrec|sesrec)\d+\.csv", Path(source).name.lower()):
        raise InputError(
            "is one of the study's raw logs, not a table of rounds and not a folder; expected the "
            "folder holding eventrec*.csv and sesrec*.csv, or a table with columns "
            f"{', '.join(COLUMNS)}",
            path=source,
        )


def read_rounds_table(table) -> HotspotData:
    """The hotspot data of a tidy table of rounds (see the module docstring)."""
    t = TidyTable(table, COLUMNS, OPTIONAL, special=_refuse_raw_log)
    df, bad = t.df, t.bad
    if "session" not in df.columns and "session_id" in df.columns:  # as ibo-data observations writes it
        df["session"] = df["session_id"]
    for col in COLUMNS + (("session",) if "session" in df.columns else ()):
        df[col] = t.numbers(col, integer=col in ("subject", "session"))
    if (df["subject"] < 1).any():
        bad(df["subject"] < 1, "subject", "expected a subject number >= 1")
    out_of = (df["theta2"] <= -math.pi - 1e-9) | (df["theta2"] > math.pi + 1e-9)
    if out_of.any():
        bad(out_of, "theta2", "expected an angle in radians in (-pi, pi]")
    if "session" not in df.columns:
        df["session"] = df.groupby("subject").cumcount() + 1
    dup = df.duplicated(["subject", "session"])
    if dup.any():
        bad(dup, "session", "the same subject and session appears twice")
    rounds = pd.DataFrame(
        {
            "subject": df["subject"],
            "user_id": df["subject"],
            "session_id": df["session"],
            "round_index": df.groupby("subject").cumcount() + 1,
            "delta_r1": df["delta_r1"].astype(float),
            "theta2": df["theta2"].astype(float),
            "delta_r2": np.nan,
            "delta_r3": np.nan,
            "delta_total": np.nan,
            "reachable": False,
            "eligible": True,
        }
    )
    return HotspotData(
        moves=pd.DataFrame(), rounds=rounds, folder=None if isinstance(table, pd.DataFrame) else Path(table), burn_in=0
    )


__all__ = ["COLUMNS", "OPTIONAL", "is_table", "read_rounds_table"]
