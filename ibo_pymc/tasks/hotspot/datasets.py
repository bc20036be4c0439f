"""Named datasets: what ``--data NAME`` can name besides a folder.

``"demo"`` is the simulated demo cohort: written once, deterministically and
offline, by the task simulator into the per-user cache (one folder per argmax
table format, since it is simulated from the tables), with its generating
parameters in ``truth.csv``. Anything else is a folder of raw logs, or nothing
(``IBO_DATA_DIR``, else the fetched study logs): see
:func:`ibo_pymc.tasks.hotspot.data.fetch.resolve_data_dir`.

This sits above both the data layer and the simulator, so that neither
imports the other to resolve a name.
"""

from __future__ import annotations

from pathlib import Path

from ibo_pymc.tasks.hotspot.data.fetch import resolve_data_dir as _resolve_folder

DEMO_NAME = "demo"


def demo_dir() -> Path:
    """Where ``--data demo`` finds the simulated demo cohort (the per-user cache)."""
    from ibo_pymc.cache import demo_dir as folder
    from ibo_pymc.tasks.hotspot.forward.argmax import TABLE_FORMAT

    return folder(TABLE_FORMAT)


def resolve_data_dir(data: str | Path | None = None, *, progress: bool = True) -> Path:
    """The folder of raw logs that ``data`` names: ``"demo"`` (generated on first use), a folder,
    or ``None`` (``IBO_DATA_DIR``, else the fetched study logs)."""
    if data is not None and str(data) == DEMO_NAME and not Path(data).exists():
        from ibo_pymc.tasks.hotspot.simulate.task import ensure_demo

        return ensure_demo(demo_dir(), progress=progress)
    return _resolve_folder(data, progress=progress)


def load_data(data=None, *, progress: bool = True, subjects=None):
    """The hotspot data that ``data`` names: a tidy table of rounds (DataFrame, CSV or Parquet file;
    :mod:`ibo_pymc.tasks.hotspot.data.table`), ``"demo"``, a folder of raw logs, or None (``IBO_DATA_DIR``, else
    fetched). ``subjects``: of raw logs, read only these subjects' (:func:`~ibo_pymc.tasks.hotspot.data.rounds.
    load_hotspot`); a table is read whole."""
    from ibo_pymc.tasks.hotspot.data.rounds import load_hotspot
    from ibo_pymc.tasks.hotspot.data.table import is_table, read_rounds_table

    if is_table(data):
        return read_rounds_table(data)
    return load_hotspot(resolve_data_dir(data, progress=progress), subjects=subjects)
