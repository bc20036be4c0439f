"""One data convention for every study: IBO_DATA_DIR (a folder of study folders, or one study's own folder),
the per-user cache, and IBO_DATA_URL (a mirror with one folder per study)."""

from __future__ import annotations

import pytest

from ibo_pymc.data.sources import local_copy, mirror_url
from ibo_pymc.errors import InputError


def test_local_copy_of_a_study(tmp_path, monkeypatch):
    monkeypatch.delenv("IBO_DATA_DIR", raising=False)
    assert local_copy("hotspot_raw") is None
    (tmp_path / "hotspot_raw").mkdir()
    monkeypatch.setenv("IBO_DATA_DIR", str(tmp_path))
    assert local_copy("hotspot_raw") == tmp_path / "hotspot_raw"  # a folder of study folders
    assert local_copy("cognitivemaps") == tmp_path  # no such folder: IBO_DATA_DIR is the study's own
    monkeypatch.setenv("IBO_DATA_DIR", str(tmp_path / "missing"))
    with pytest.raises(InputError, match="IBO_DATA_DIR does not name an existing folder"):
        local_copy("hotspot_raw")


def test_mirror_of_a_study(monkeypatch):
    monkeypatch.delenv("IBO_DATA_URL", raising=False)
    assert mirror_url("cognitivemaps") is None
    monkeypatch.setenv("IBO_DATA_URL", "http://127.0.0.1:8000/studies/")
    assert mirror_url("cognitivemaps") == "http://127.0.0.1:8000/studies/cognitivemaps/"


def test_both_studies_follow_it(monkeypatch, raw_folder):
    from ibo_pymc.tasks.gridsearch.data import resolve_data_dir as grid_dir
    from ibo_pymc.tasks.hotspot.data import resolve_data_dir as hotspot_dir

    shared = raw_folder.parent  # the project's shared data: hotspot_raw/, cognitivemaps/, ...
    monkeypatch.setenv("IBO_DATA_DIR", str(shared))
    monkeypatch.delenv("IBO_GRID_DATA_DIR", raising=False)
    assert hotspot_dir() == shared / "hotspot_raw" and grid_dir() == shared / "cognitivemaps"
    monkeypatch.setenv("IBO_GRID_DATA_DIR", str(shared / "cognitivemaps"))  # the old variable: refused, not ignored
    with pytest.raises(InputError, match="IBO_GRID_DATA_DIR is no longer read"):
        grid_dir()


def test_tests_without_the_shared_data_fetch_or_skip(tmp_path):
    """Issue 31, 3.9: a user without ../shared runs the suite: a study's tests use the local copy, else the
    package's pinned fetch, else they are skipped saying why (no network here: the fetch fails)."""
    from tests.conftest import study_or_skip

    assert study_or_skip(tmp_path, True, lambda: 1 / 0, "x") == tmp_path  # a complete local copy: no fetch
    assert study_or_skip(tmp_path / "none", False, lambda: tmp_path / "cache", "x") == tmp_path / "cache"

    def offline():
        raise InputError("download failed (ConnectionError)")

    with pytest.raises(pytest.skip.Exception, match="the study's files: no local copy at .*download failed"):
        study_or_skip(tmp_path / "none", False, offline, "the study's files")
