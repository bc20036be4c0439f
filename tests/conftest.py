"""Shared fixtures: the study's raw logs beside the repository, tiny hand-made logs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_RAW = REPO.parent / "shared" / "data" / "hotspot_raw"
PAPER_SPLITS = REPO.parent / "shared" / "data" / "paper_splits.csv"


def raw_dir() -> Path:
    env = os.environ.get("IBO_DATA_DIR")
    return Path(env) if env else SHARED_RAW


@pytest.fixture(scope="session")
def raw_folder() -> Path:
    p = raw_dir()
    if not (p / "eventrec36.csv").is_file():
        pytest.fail(f"the study's raw logs are expected at {p} (set IBO_DATA_DIR)")
    return p


@pytest.fixture(scope="session")
def hotspot(raw_folder):
    from ibo_pymc.data import load_hotspot

    return load_hotspot(raw_folder)


@pytest.fixture(scope="session")
def paper_split(hotspot):
    from ibo_pymc.data import load_split

    return load_split(PAPER_SPLITS, hotspot)
