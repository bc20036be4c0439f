from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def choices(cogmaps_folder):
    from ibo_pymc.tasks.gridsearch.data import load_cognitivemaps

    return load_cognitivemaps(cogmaps_folder)


@pytest.fixture(scope="session")
def environments(cogmaps_folder):
    from ibo_pymc.tasks.gridsearch.data import load_environments

    return load_environments(cogmaps_folder)
