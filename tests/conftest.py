"""Shared fixtures: the study's raw logs beside the repository, tiny hand-made logs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_RAW = REPO.parent / "shared" / "data" / "hotspot_raw"
PAPER_SPLITS = REPO.parent / "shared" / "data" / "paper_splits.csv"
COGNITIVEMAPS = REPO.parent / "shared" / "data" / "cognitivemaps"
GRIDSEARCH2018 = REPO.parent / "shared" / "data" / "gridsearch2018"


# Paths given relative to where pytest was started (the README's command passes
# IBO_DATA_DIR=../shared/data) are made absolute once, here, so that
# every process the tests start in another folder (notebook kernels run in
# notebooks/, CLI runs in temporary folders) reads the same data.
for _var in ("IBO_DATA_DIR", "IBO_CACHE_DIR", "IBO_TABLE_DIR"):
    if os.environ.get(_var):
        os.environ[_var] = str(Path(os.environ[_var]).resolve())


def raw_dir() -> Path:
    """The hotspot logs: IBO_DATA_DIR's hotspot_raw/ folder, or IBO_DATA_DIR itself (ibo_pymc.data.sources)."""
    env = os.environ.get("IBO_DATA_DIR")
    if not env:
        return SHARED_RAW
    return Path(env) / "hotspot_raw" if (Path(env) / "hotspot_raw").is_dir() else Path(env)


def study_or_skip(local: Path, complete: bool, fetch, what: str) -> Path:
    """A study's folder for the tests: the local copy (../shared/data, or IBO_DATA_DIR), else the package's own
    pinned, hash-checked fetch into the per-user cache; where neither is there (no copy, no network), the tests
    that need it are skipped, saying why."""
    if complete:
        return local
    from ibo_pymc.errors import InputError

    try:
        return fetch()
    except InputError as exc:
        pytest.skip(f"{what}: no local copy at {local}, and fetching it failed ({exc})")


@pytest.fixture(scope="session")
def raw_folder() -> Path:
    from ibo_pymc.tasks.hotspot.data.fetch import cached_data_dir

    p = raw_dir()
    return study_or_skip(
        p, (p / "eventrec36.csv").is_file(), lambda: cached_data_dir(progress=False), "the hotspot study's raw logs"
    )


@pytest.fixture(scope="session")
def cogmaps_folder() -> Path:
    from ibo_pymc.tasks.gridsearch.data import fetch

    return study_or_skip(
        COGNITIVEMAPS,
        (COGNITIVEMAPS / "full.csv").is_file(),
        lambda: fetch(progress=False),
        "the cognitivemaps study's files",
    )


@pytest.fixture(scope="session")
def gridsearch2018_folder() -> Path:
    from ibo_pymc.tasks.gridsearch.gridsearch2018 import fetch

    return study_or_skip(
        GRIDSEARCH2018,
        (GRIDSEARCH2018 / "experimentData2D.csv").is_file(),
        lambda: fetch(progress=False),
        "the gridsearch2018 study's files",
    )


@pytest.fixture(scope="session")
def hotspot(raw_folder):
    from ibo_pymc.tasks.hotspot.data import load_hotspot

    return load_hotspot(raw_folder)


@pytest.fixture(scope="session")
def paper_split(hotspot):
    from ibo_pymc.tasks.hotspot.data import load_split

    if not PAPER_SPLITS.is_file():
        pytest.skip(f"the paper's split is expected at {PAPER_SPLITS} (the project's shared data)")
    return load_split(PAPER_SPLITS, hotspot)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """The malformed-input corpus (tests/corpus/make_corpus.py), built afresh: no logs are kept in the repository."""
    import json

    from tests.corpus.make_corpus import build

    dest = tmp_path_factory.mktemp("corpus")
    index = build(dest)
    manifest = json.loads((REPO / "tests" / "corpus" / "cases.json").read_text())
    assert index == manifest, "tests/corpus/cases.json is stale: run python tests/corpus/make_corpus.py"
    return dest


@pytest.fixture(scope="session")
def valid_raw(corpus) -> Path:
    """Two small well-formed synthetic subjects (user ids 70, 71) in the study's log format."""
    return corpus / "_valid" / "raw"
