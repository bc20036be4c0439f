"""Where the package keeps what it fetches or computes once per user (the bottom layer: imports nothing of the package).

``IBO_CACHE_DIR`` overrides the platform cache folder (``.../ibo-pymc``);
``IBO_TABLE_DIR`` overrides the folder of the argmax tables.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The per-user cache folder of the package (``IBO_CACHE_DIR``, else the platform cache folder)."""
    root = os.environ.get("IBO_CACHE_DIR")
    if root:
        return Path(root)
    import pooch

    return Path(pooch.os_cache("ibo-pymc"))


def raw_logs_dir() -> Path:
    """The per-user cache of the study's raw logs."""
    return cache_root() / "hotspot_raw"


def dataset_dir(name: str) -> Path:
    """The per-user cache of a fetched dataset (``<cache>/<name>``)."""
    return cache_root() / name


def tables_dir() -> Path:
    """The per-user cache of argmax tables (``IBO_TABLE_DIR``, else ``<cache>/tables``)."""
    return Path(os.environ.get("IBO_TABLE_DIR") or cache_root() / "tables")


def demo_dir(table_format: int) -> Path:
    """The per-user folder of the simulated demo cohort made with argmax tables of ``table_format``."""
    return cache_root() / f"demo-tables{table_format}"
