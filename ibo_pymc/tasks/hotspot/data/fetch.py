"""Getting the study's public raw logs: pinned URLs, SHA-256 checks, a per-user cache.

The raw logs are never shipped with the package. They live in the public
repository ``nsandholtz/hotspot_paper`` (MIT licence), folder ``data/raw_data``,
and are fetched at the pinned commit below; every file is checked against the
SHA-256 in ``registry.txt``.

Where the data comes from follows the convention of every study
(:mod:`ibo_pymc.data.sources`): ``--data DIR``; ``IBO_DATA_DIR`` (its ``hotspot_raw/``
folder, or the folder of logs itself); the per-user cache ``<cache>/hotspot_raw``,
fetched on first use from the pinned commit, or from the mirror
``IBO_DATA_URL/hotspot_raw/``.

``--data demo`` names the simulated demo cohort instead; that name is
resolved above the simulator, in :mod:`ibo_pymc.tasks.hotspot.datasets`.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from ibo_pymc.cache import raw_logs_dir
from ibo_pymc.data.fetch import DataIntegrityError, check_pinned, fetch_pinned
from ibo_pymc.data.sources import local_copy, mirror_url
from ibo_pymc.errors import InputError

#: The public repository and the commit the registry hashes were taken from.
SOURCE_REPOSITORY = "nsandholtz/hotspot_paper"
SOURCE_COMMIT = "f5c7d7b7c10f97c42422c4490a18238d4162fb98"
DEFAULT_BASE_URL = f"https://github.com/{SOURCE_REPOSITORY}/raw/{SOURCE_COMMIT}/data/raw_data/"


def registry() -> dict[str, str]:
    """File name -> ``sha256:<hex>`` for the 56 raw-log files."""
    text = resources.files("ibo_pymc.tasks.hotspot.data").joinpath("registry.txt").read_text()
    out = {}
    for line in text.splitlines():
        if line.strip():
            name, digest = line.split()
            out[name] = digest
    return out


def _pinned_files(base: str = "") -> dict[str, tuple[str, str]]:
    """The raw logs as :func:`fetch_pinned` and :func:`check_pinned` take them: name -> (``base`` + name, hex
    SHA-256)."""
    return {name: (base + name, digest.removeprefix("sha256:")) for name, digest in registry().items()}


#: the study's folder name in IBO_DATA_DIR, on a mirror and in the cache
STUDY = "hotspot_raw"


def base_url() -> str:
    """Where the logs are fetched from: the mirror's ``hotspot_raw/`` folder, else the pinned commit."""
    return mirror_url(STUDY) or DEFAULT_BASE_URL


def cache_dir() -> Path:
    """The per-user cache folder of the raw logs (:func:`ibo_pymc.cache.raw_logs_dir`)."""
    return raw_logs_dir()


def fetch(dest: str | Path | None = None, *, url: str | None = None, progress: bool = True) -> Path:
    """Download every raw-log file into ``dest`` (default: the cache) and verify it.

    Files already present with the right hash are not downloaded again; a
    present file with the wrong hash is downloaded again. A file whose download
    does not match its pinned hash is rejected (and not kept). One progress line
    on stderr. Returns the folder.
    """
    dest = Path(dest) if dest is not None else cache_dir()
    base = url or base_url()
    base = base if base.endswith("/") else base + "/"
    return fetch_pinned(
        _pinned_files(base),
        dest,
        label="raw-log",
        progress=progress,
        integrity_hint=". The source may have changed or the transfer was tampered with",
        network_hint=" or set IBO_DATA_URL to a reachable mirror",
    )


def verify(folder: str | Path) -> list[str]:
    """Check every registered file in ``folder`` against its SHA-256.

    Returns a list of problems (empty when the folder is complete and intact).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("not a folder", path=folder)
    return [f"{folder / name}: {what}" for name, what in check(folder).items()]


def check(folder: Path) -> dict[str, str]:
    """File name -> what is wrong with it, for every registered file that is missing or damaged in ``folder``."""
    return check_pinned(folder, _pinned_files())


def resolve_data_dir(data: str | Path | None = None, *, progress: bool = True) -> Path:
    """The folder of raw logs to use: ``data``, else ``IBO_DATA_DIR`` (:func:`ibo_pymc.data.sources.local_copy`),
    else the (fetched) cache.

    Named datasets (``"demo"``) are resolved a layer up, by :func:`ibo_pymc.tasks.hotspot.datasets.resolve_data_dir`.
    """
    if data is not None:
        p = Path(data)
        if p.exists() and not p.is_dir():
            raise InputError(
                "neither a folder nor a table; expected the folder of eventrec*.csv / sesrec*.csv logs, "
                "or a tidy table of rounds as CSV or Parquet (.csv, .parquet, .pq)",
                path=p,
                field="--data",
            )
        if not p.is_dir():
            what = "table" if p.suffix.lower() in (".csv", ".parquet", ".pq") else "folder or table"
            raise InputError(
                f"no such {what}; expected the folder of eventrec*.csv / sesrec*.csv logs, or a tidy "
                "table of rounds as CSV or Parquet",
                path=p,
                field="--data",
            )
        return p
    local = local_copy(STUDY)
    if local is not None:
        return local
    return cached_data_dir(progress=progress)


def cached_data_dir(*, progress: bool = True) -> Path:
    """The per-user cache of the raw logs, every file checked against its pinned SHA-256 on each use.

    Missing files are fetched; a damaged file (edited, truncated) is never read:
    it is fetched again, and when that fails the error says how to repair the cache.
    """
    dest = cache_dir()
    problems = check(dest) if dest.is_dir() else {}
    if dest.is_dir() and not problems:
        return dest
    damaged = [n for n, what in problems.items() if what != "missing"]
    if damaged and progress:
        print(
            f"{len(damaged)} cached raw-log file(s) do not match their pinned SHA-256 ({damaged[0]}, ...); "
            "fetching them again",
            file=sys.stderr,
        )
    try:
        fetch(dest, progress=progress)
    except InputError as exc:
        if not damaged:
            raise
        raise InputError(
            f"does not match its pinned SHA-256 and could not be fetched again ({exc}); run 'ibo-data fetch' "
            f"when online, or delete {dest}, or pass --data DIR with an intact copy",
            path=dest / damaged[0],
        ) from None
    return dest


__all__ = ["DataIntegrityError", "fetch", "registry", "resolve_data_dir", "verify"]
