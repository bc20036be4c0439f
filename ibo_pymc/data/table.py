"""Bring your own data: a tidy table (CSV, Parquet or a pandas DataFrame), read and checked (any task).

:class:`TidyTable` reads the table, checks its columns and turns bad rows into
one-line errors naming the file, the CSV line and the field; each task's data
module says which columns it needs and what they mean.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.errors import InputError

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
                raise InputError(
                    f"missing column; expected the columns {', '.join(columns)}{extra}", path=self.source, field=col
                )
        if len(df) == 0:
            raise InputError("the table has no rows", path=self.source)
        self.df = df.reset_index(drop=True)

    def bad(self, mask, field: str, what: str):
        """Raise the error for the first row where ``mask`` holds."""
        i = int(np.flatnonzero(np.asarray(mask))[0])
        value = self.df[field].iloc[i]
        value = value.item() if isinstance(value, np.generic) else value  # 4.0, not np.float64(4.0)
        raise InputError(f"{what} (got {value!r})", path=self.source, line=self._line(i), field=field)

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
