"""Bring your own data (hotspot task): a tidy table with one row per round.

=========== =======================================================================
subject     subject number (integer >= 1)
delta_r1    score change of move 1 (points; its sign selects tau^- or tau^+)
theta2      the turn from the move-1 to the move-2 direction, radians in (-pi, pi]
session     optional: a round identifier (unique per subject; splits refer to it); ``session_id``,
            as ``ibo-data observations`` writes it, is read as ``session``
=========== =======================================================================

Read from CSV or Parquet, or taken as a pandas DataFrame, and turned into the
same :class:`~ibo_pymc.data.rounds.HotspotData` the raw logs give (every row
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

from ibo_pymc.data.rounds import HotspotData
from ibo_pymc.errors import InputError

COLUMNS = ("subject", "delta_r1", "theta2")
OPTIONAL = ("session",)
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def is_table(data) -> bool:
    """Whether ``data`` names a tidy table (a DataFrame, or an existing CSV/Parquet file)."""
    if isinstance(data, pd.DataFrame):
        return True
    return data is not None and Path(data).is_file() and Path(data).suffix.lower() in TABLE_SUFFIXES


class TidyTable:
    """A user's table read for checking: ``df`` (columns stripped, index 0..n-1), where it came from, and
    :meth:`bad`, which raises the one-line error of the first row a mask flags (file, CSV line, field)."""

    def __init__(self, table, columns, optional=(), *, source: str | None = None, special=None):
        if isinstance(table, pd.DataFrame):
            df, self.source, self._line = table.copy(), source or "<DataFrame>", (lambda i: None)
        else:
            path = Path(table)
            self.source = str(path)
            if not path.is_file():
                raise InputError("table file does not exist", path=path)
            try:
                df = pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv(path)
            except Exception as exc:  # noqa: BLE001 - any reader failure is bad input
                raise InputError(f"cannot be read as a table ({type(exc).__name__})", path=path) from None
            self._line = (lambda i: int(i) + 2) if path.suffix.lower() == ".csv" else (lambda i: None)
        df.columns = [str(c).strip() for c in df.columns]
        for col in columns:
            if col not in df.columns:
                if special:
                    special(self.source)
                extra = f" (optional {', '.join(optional)})" if optional else ""
                raise InputError(f"missing column; expected the columns {', '.join(columns)}{extra}",
                                 path=self.source, field=col)
        if len(df) == 0:
            raise InputError("the table has no rows", path=self.source)
        self.df = df.reset_index(drop=True)

    def bad(self, mask, field: str, what: str):
        """Raise the error for the first row where ``mask`` holds."""
        i = int(np.flatnonzero(np.asarray(mask))[0])
        raise InputError(f"{what} (got {self.df[field].iloc[i]!r})", path=self.source, line=self._line(i), field=field)

    def numbers(self, col: str, *, integer: bool = False) -> pd.Series:
        """Column ``col`` as finite numbers (integers if asked), else the error of its first bad row."""
        num = pd.to_numeric(self.df[col], errors="coerce")
        nonfinite = num.isna() | ~np.isfinite(num.fillna(0.0))
        if nonfinite.any():
            self.bad(nonfinite, col, "expected a number")
        if integer:
            if (num != np.round(num)).any():
                self.bad(num != np.round(num), col, "expected an integer")
            return num.astype(int)
        return num.astype(float)


def _refuse_raw_log(source: str) -> None:
    if re.fullmatch(r"(eventrec|sesrec)\d+\.csv", Path(source).name.lower()):
        raise InputError("is one of the study's raw logs, not a table of rounds and not a folder; expected the "
                         "folder holding eventrec*.csv and sesrec*.csv, or a table with columns "
                         f"{', '.join(COLUMNS)}", path=source)


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
    rounds = pd.DataFrame({
        "subject": df["subject"], "user_id": df["subject"], "session_id": df["session"],
        "round_index": df.groupby("subject").cumcount() + 1,
        "delta_r1": df["delta_r1"].astype(float), "theta2": df["theta2"].astype(float),
        "delta_r2": np.nan, "delta_r3": np.nan, "delta_total": np.nan,
        "reachable": False, "eligible": True,
    })
    return HotspotData(moves=pd.DataFrame(), rounds=rounds, folder=None if isinstance(table, pd.DataFrame) else Path(table),
                       burn_in=0)
