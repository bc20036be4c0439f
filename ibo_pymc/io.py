"""Atomic output files.

Every file the package writes goes through :func:`atomic_path`: the content
is written to a temporary file in the destination folder and renamed over the
destination only once it is complete, so an interrupted run leaves the
previous output intact and no partial file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; rename it onto ``dest`` on success.

    The temporary file keeps the destination's suffix, so writers that infer the
    format from the extension (matplotlib, xarray) still work. On any exception,
    including KeyboardInterrupt, the temporary file is removed.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.tmp-", suffix=dest.suffix, dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates the file private (0600): give it the usual permissions
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def sweep_partial(folder) -> int:
    """Remove what unfinished atomic writes (:func:`atomic_path`) left in ``folder``: the temporary files of
    writers killed mid-write (a worker process lost, a run interrupted). Returns how many."""
    folder = Path(folder)
    n = 0
    for f in folder.glob(".*.tmp-*") if folder.is_dir() else ():
        f.unlink(missing_ok=True)
        n += 1
    return n


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_csv(df: pd.DataFrame, dest: str | os.PathLike, **kwargs) -> Path:
    """Write ``df`` to ``dest`` as CSV, atomically. Returns the destination."""
    kwargs.setdefault("index", False)
    with atomic_path(dest) as tmp:
        df.to_csv(tmp, **kwargs)
    return Path(dest)


def write_text(text: str, dest: str | os.PathLike) -> Path:
    """Write ``text`` to ``dest`` atomically."""
    with atomic_path(dest) as tmp:
        tmp.write_text(text)
    return Path(dest)


def write_fit(idata, path) -> Path:
    """Write a fit's InferenceData as NetCDF, atomically (temporary file in the same folder, then rename).

    Uncompressed: draws of continuous quantities barely compress (a default fit's
    20 MB become 17.7 MB with zlib), and compressing takes twice as long as writing.
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        idata.to_netcdf(str(tmp), engine="h5netcdf", compress=False)
    return path


def check_writable(folder) -> None:
    """Fail early (an :class:`~ibo_pymc.errors.InputError`) when the output folder cannot be written. Folders
    made for the check are removed again: a run refused later (bad input found after this check) leaves
    nothing behind."""
    from ibo_pymc.errors import InputError

    folder = Path(folder)
    missing = [d for d in (folder, *folder.parents) if not d.exists()]
    try:
        with atomic_path(folder / ".ibo-write-check") as tmp:
            tmp.write_text("")
        (folder / ".ibo-write-check").unlink()
    except OSError as exc:
        raise InputError(
            f"cannot write there ({exc.strerror or type(exc).__name__})", path=folder, field="--out"
        ) from None
    finally:
        for d in missing:  # deepest first
            with contextlib.suppress(OSError):
                d.rmdir()


def save_figure(fig, path) -> None:
    """Write a figure (format from the suffix: .png or .pdf) atomically."""
    from ibo_pymc.errors import InputError

    path = Path(path)
    if path.suffix.lower() not in (".png", ".pdf"):
        raise InputError(f"expected a file name ending in .png or .pdf, got {path.name!r}", field="--out")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=150, bbox_inches="tight")
