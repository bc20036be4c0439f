"""Fetching a study's public files: pinned URLs, SHA-256 checks, a per-user cache (any study).

A study names its files as ``{local name: (full URL at a pinned commit, hex SHA-256)}``;
:func:`fetch_pinned` downloads them into a folder (the per-user cache by default,
:mod:`ibo_pymc.cache`) and :func:`check_pinned` checks a local copy. Each task's
data module declares its study's files and where to look first.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sys
from pathlib import Path

import pooch

from ibo_pymc.errors import InputError


class DataIntegrityError(InputError):
    """A data file whose content does not match its pinned SHA-256."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def _pooch_quiet():
    """pooch logs one INFO line per downloaded file; our own progress line replaces them."""
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def fetch_pinned(
    files: dict[str, tuple[str, str]],
    dest: str | Path,
    *,
    label: str,
    progress: bool = True,
    integrity_hint: str = "",
    network_hint: str = "",
) -> Path:
    """Download pinned files into ``dest`` and check each against its SHA-256 (any dataset).

    ``files`` maps the local file name to ``(full URL, hex SHA-256)``; files
    present with the right hash are kept, a mismatching download is rejected
    (not kept). One progress line on stderr. Returns ``dest``. The hints end the two error messages.
    """
    dest = Path(dest)
    reg = {name: f"sha256:{digest}" for name, (_, digest) in files.items()}
    fetcher = pooch.create(
        path=dest, base_url="", registry=reg, urls={n: u for n, (u, _) in files.items()}, retry_if_failed=2
    )
    names = sorted(files)
    for k, name in enumerate(names, start=1):
        if progress:
            print(f"\rfetching {label} files {k}/{len(names)}: {name:<24}", end="", file=sys.stderr, flush=True)
        try:
            with _pooch_quiet():
                fetcher.fetch(name)
        except ValueError as exc:
            if "hash" in str(exc).lower():
                raise DataIntegrityError(
                    f"download does not match its pinned SHA-256 {files[name][1][:12]}...; rejected (not saved)"
                    + integrity_hint,
                    path=files[name][0],
                ) from None
            raise
        except Exception as exc:  # network errors
            raise InputError(
                f"download failed ({type(exc).__name__}: {exc}); pass --data DIR with a local copy" + network_hint,
                path=files[name][0],
            ) from None
    if progress:
        print(f"\rfetched {len(names)} {label} files into {dest}" + " " * 20, file=sys.stderr)
    return dest


def check_pinned(folder: str | Path, files: dict[str, tuple[str, str]]) -> dict[str, str]:
    """File name -> what is wrong with it, for every pinned file missing or damaged in ``folder``."""
    folder = Path(folder)
    problems = {}
    for name, (_, digest) in sorted(files.items()):
        p = folder / name
        if not p.is_file():
            problems[name] = "missing"
        elif (got := _sha256(p)) != digest:
            problems[name] = f"SHA-256 {got[:12]}... does not match the pinned {digest[:12]}..."
    return problems


def fetch_study(study: str, files: dict[str, tuple[str, str]], dest=None, *, progress: bool = True) -> Path:
    """Download a study's pinned ``files`` into ``dest`` (default: the per-user cache, ``<cache>/<study>``), from
    the mirror ``IBO_DATA_URL`` when set (``<url>/<study>/<file>``, the same hashes), else the pinned URLs; files
    already there and intact are kept."""
    from ibo_pymc.cache import dataset_dir
    from ibo_pymc.data.sources import mirror_url

    mirror = mirror_url(study)
    if mirror:
        files = {n: (mirror + n, h) for n, (_, h) in files.items()}
    return fetch_pinned(
        files,
        Path(dest) if dest is not None else dataset_dir(study),
        label=study,
        progress=progress,
        network_hint=" or set IBO_DATA_URL to a reachable mirror",
    )


def study_dir(study: str, files: dict[str, tuple[str, str]], data=None, *, expect: str, progress: bool = True) -> Path:
    """The folder of a study's files: ``data``, else ``IBO_DATA_DIR`` (its ``<study>/`` folder, or the folder
    itself), else the per-user cache, fetched on first use (:func:`fetch_study`; a damaged cached copy is
    fetched again). ``expect`` says in the error what the folder should hold."""
    from ibo_pymc.cache import dataset_dir
    from ibo_pymc.data.sources import local_copy

    p = Path(data) if data is not None else local_copy(study)
    if p is not None:
        if not p.is_dir():
            raise InputError(
                f"not an existing folder; expected {expect}",
                path=p,
                field="--data" if data is not None else "IBO_DATA_DIR",
            )
        return p
    dest = dataset_dir(study)
    if dest.is_dir() and not check_pinned(dest, files):
        return dest
    return fetch_study(study, files, dest, progress=progress)
