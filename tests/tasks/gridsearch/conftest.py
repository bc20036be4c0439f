from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
COGNITIVEMAPS = REPO.parent / "shared" / "data" / "cognitivemaps"


@pytest.fixture(scope="session")
def cogmaps_folder() -> Path:
    if not (COGNITIVEMAPS / "full.csv").is_file():
        pytest.fail(f"the cognitivemaps data are expected at {COGNITIVEMAPS}")
    return COGNITIVEMAPS


@pytest.fixture(scope="session")
def choices(cogmaps_folder):
    from ibo_pymc.tasks.gridsearch.data import load_cognitivemaps

    return load_cognitivemaps(cogmaps_folder)


@pytest.fixture(scope="session")
def environments(cogmaps_folder):
    from ibo_pymc.tasks.gridsearch.data import load_environments

    return load_environments(cogmaps_folder)
