"""Atomic output files.

Every file the package writes goes through :func:`atomic_path`: the content
is written to a temporary file in the destination folder and renamed over the
destination only once it is complete, so an interrupted run leaves the
previous output intact and no partial file.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc import stop


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; rename it onto ``dest`` on success.

    The temporary file keeps the destination's suffix, so writers that infer the
    format from the extension (matplotlib, xarray) still work. On any exception,
    including KeyboardInterrupt, the temporary file is removed; so it is when the user asked to stop
    (:mod:`ibo_pymc.stop`) and the request was lost on the way, which is raised here instead of the rename.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.tmp-", suffix=dest.suffix, dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # a stop the user asked for that a library swallowed on the way takes effect here, before the commit
        stop.raise_if_requested()
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


#: the groups a compact fit leaves out: each is drawn again on demand (``posterior_predictive()``)
ON_DEMAND_GROUPS = ("posterior_predictive",)

#: the groups a compact fit packs into 16-bit integers
PACKED_GROUPS = ("log_likelihood",)

#: packing splits a variable's range into this many steps: codes -32766..32766 around the range's midpoint
#: (-32768 marks a missing value), so the rounding is at most range / (2 * _STEPS) per value
_STEPS = 65532


@dataclass(frozen=True)
class SavedFit(os.PathLike):
    """A fit written to ``path``, with what was computed from it while it was in memory: ``evidence``, its long
    evidence rows (:func:`ibo_pymc.population.evidence.fit_evidence`), so that a cohort's comparison does not read
    every file back. It stands for its path wherever one is taken (``os.fspath``, ``Path(...)``, ``str``); two are
    equal, and hash alike, when their paths are."""

    path: Path
    evidence: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return os.fspath(self.path)


def write_fit(idata, path, *, full: bool = False) -> Path:
    """Write a fit's InferenceData as NetCDF, atomically (temporary file in the same folder, then rename).

    Compact by default, since a fit's size is its pointwise groups (chain x draw x observation: a hotspot
    subject of 635 rounds held 2 x 20 MB of them in float64):

    - the groups of :data:`ON_DEMAND_GROUPS` are left out (the model draws its posterior predictive again);
    - every variable of :data:`PACKED_GROUPS` is stored as 16-bit integers with a ``scale_factor`` and
      ``add_offset`` spanning its range (CF packing, zlib-compressed), which xarray and ArviZ decode on
      reading, so ``az.loo`` reads the file as before. The rounding is at most (max - min) / 131064 per
      value (about 5e-5 nats for a hotspot fit); plain ``az.loo`` on the file moves by far less than its
      Monte Carlo error, and the package's own LOO (``loo()``, per component) recomputes the
      log-likelihood from the conditional draws, so it does not move at all. A variable that is not finite
      everywhere is kept as it is.

    ``full=True`` writes every group as it is in memory, the log-likelihood in float64. Other groups are
    uncompressed: draws of continuous quantities barely compress, and compressing takes twice as long as
    writing.

    The file reads back as the one ``xarray.DataTree.to_netcdf(engine="h5netcdf")`` writes (a group per
    InferenceData group, attrs at the root, each variable encoded by xarray's own CF encoder), in the same HDF5
    layout, but is written with h5py directly (:func:`_write_groups`): xarray's store and h5netcdf's API look
    every dimension and variable up by path several times per variable, which was most of a fit's writing time.
    """
    path = Path(path)
    groups = {g: idata[g] for g in idata.groups() if full or g not in ON_DEMAND_GROUPS}
    # full: the packed groups' variables lose any packing they carry (a fit read from a compact file holds it)
    encodings = {
        g: ({name: {} for name in groups[g].data_vars} if full else _packing(groups[g]))
        for g in PACKED_GROUPS
        if g in groups
    }
    with atomic_path(path) as tmp:
        _write_groups(tmp, groups, encodings, dict(getattr(idata, "attrs", {}) or {}))
    return path


def _packing(ds) -> dict:
    """The int16 packing of each variable of ``ds`` (an empty dict where the variable is kept as it is)."""
    encodings = {}
    for name, v in ds.data_vars.items():
        x = np.asarray(v.values)
        if x.dtype.kind != "f" or x.size == 0 or not np.isfinite(x).all():
            encodings[name] = {}
            continue
        lo, hi = float(x.min()), float(x.max())
        scale = (hi - lo) / _STEPS if hi > lo else 1.0
        encodings[name] = {
            "dtype": "int16",
            "scale_factor": scale,
            "add_offset": (hi + lo) / 2,
            "_FillValue": np.int16(-32768),
            "zlib": True,
            "complevel": 4,
            "shuffle": True,
        }
    return encodings


def _write_groups(path: Path, groups: dict, encodings: dict, attrs: dict) -> None:
    """Write each dataset of ``groups`` as a NetCDF-4 group of a new file ``path``, ``attrs`` at its root.

    ``encodings[group][variable]`` replaces that variable's on-disk encoding (an empty dict: none, the values
    as in memory); every other variable keeps its own. Each dataset is encoded as xarray's h5netcdf store encodes
    it (``encode_dataset_coordinates``, ``cf_encoder``: packing, fill values, booleans, times, the ``coordinates``
    attribute; then object arrays given a dtype and text as NetCDF-4 strings), so the file reads back through
    xarray and ArviZ exactly as one written by ``DataTree.to_netcdf``.

    The encoded variables are written with h5py in the layout h5netcdf gives them (:func:`_write_group`), not
    through h5netcdf's API: that API resolves every dimension and variable by path again at each step (about
    45 HDF5 lookups per variable). A hotspot fit's compact file took 0.2-0.38 s that way, 0.08-0.18 s this way
    (subjects 8, 14, 28, in one process); the layout is tested against xarray's own file
    (``tests/fit_files.py``).
    """
    import h5py
    from xarray.coding.strings import CharacterArrayCoder, EncodedStringCoder
    from xarray.conventions import cf_encoder, encode_dataset_coordinates

    try:  # where xarray keeps it has moved between releases
        from xarray.backends.common import ensure_dtype_not_object
    except ImportError:  # pragma: no cover - older xarray
        from xarray.conventions import ensure_dtype_not_object

    from ibo_pymc import __version__

    def encoded(name, v):  # the h5netcdf store's own steps after the CF encoder
        v = ensure_dtype_not_object(v, name=name)
        return CharacterArrayCoder().encode(EncodedStringCoder(allows_unicode=True).encode(v, name=name), name=name)

    # h5netcdf (like netCDF-C) tracks the creation order of groups, variables and attributes
    with h5py.File(path, "w", track_order=True) as f:
        _set_attrs(f.attrs, _checked_attrs(attrs, "the file"))
        dimids = itertools.count()  # NetCDF-4's dimension ids: one numbering for the whole file
        for name, ds in groups.items():
            variables, group_attrs = encode_dataset_coordinates(ds)
            for k, enc in encodings.get(name, {}).items():
                variables[k] = variables[k].copy(deep=False)
                variables[k].encoding = dict(enc)
            variables, group_attrs = cf_encoder(variables, group_attrs)
            variables = {k: encoded(k, v) for k, v in variables.items()}
            group = f.create_group(name, track_order=True)
            _write_group(group, name, variables, dimids)
            _set_attrs(group.attrs, _checked_attrs(group_attrs, f"group {name!r}"))
        # what h5netcdf and netCDF-C write last, and readers take as the mark of a NetCDF-4 file (hidden by both)
        props = f"version=2,ibo_pymc={__version__},hdf5={h5py.version.hdf5_version},h5py={h5py.__version__}"
        f.attrs["_NCProperties"] = np.array(props, dtype=h5py.string_dtype("ascii", len(props)))


#: the dimension scale of a dimension without a coordinate variable: NetCDF-4's name for it, then its size
_NOT_A_VARIABLE = b"This is a netCDF dimension but not a netCDF variable."


def _write_group(group, name: str, variables: dict, dimids) -> None:
    """Write a group's encoded variables as h5netcdf lays them out (NetCDF-4 on HDF5).

    Every dimension is an HDF5 dimension scale numbered by ``_Netcdf4Dimid``, in the order the variables name
    them: a coordinate variable (named as its first dimension) is its own dimension's scale, any other dimension a
    float32 placeholder of its size named :data:`_NOT_A_VARIABLE`. Every other variable has its dimensions'
    scales attached, ``_Netcdf4Coordinates`` (their ids) and ``_Netcdf4Dimid`` (its first dimension's), and is
    stored as ``_nc4_non_coord_NAME`` where its name is a dimension's (NetCDF-4's rule); a fill value is set on
    the dataset and kept as ``_FillValue``. The datasets are created in h5netcdf's order (the placeholders first,
    then the variables as given), which is the order readers list them in. A dimension of two sizes, an empty one
    (NetCDF-4 would make it unlimited) and complex numbers (h5netcdf's own compound type) are refused: no fit
    holds them.
    """
    import h5py

    sizes = {}
    for k, v in variables.items():
        for n in (k, *v.dims):  # HDF5 reads a slash as a path: a subgroup, not a name
            if "/" in str(n):
                raise ValueError(f"group {name!r}: a name may not hold '/', got {n!r}")
        for d, size in zip(v.dims, v.shape):  # with the dimensions text took on (characters of bytes)
            if size == 0:
                raise ValueError(f"cannot write group {name!r}: dimension {d!r} is empty")
            if sizes.setdefault(d, size) != size:
                raise ValueError(
                    f"cannot write variable {k!r} of group {name!r}: dimension {d!r} has size {size} here and "
                    f"{sizes[d]} elsewhere"
                )
    coordinates = {k for k, v in variables.items() if v.dims and v.dims[0] == k}
    dimid = {d: next(dimids) for d in sizes}
    scales = {}
    for d, size in sizes.items():
        if d not in coordinates:
            scales[d] = group.create_dataset(d, (size,), dtype=">f4", track_order=True)
    created = {}
    for k, v in variables.items():
        data, encoding, var_attrs = v.values, v.encoding, dict(v.attrs)
        fill = var_attrs.pop("_FillValue", None)
        kind = data.dtype.kind
        if kind == "U" or (kind in "TO" and all(isinstance(x, str) for x in data.flat)):
            # text (NumPy's fixed-width, variable-width or object strings): a variable-length string; only the
            # latter two can hold something else (a gap, a number), which is refused below
            dtype, data = h5py.string_dtype(), data.astype(object)
        elif kind in "iufS":
            dtype = data.dtype
        else:
            raise ValueError(f"cannot write variable {k!r} of group {name!r}: dtype {data.dtype}")
        options = {}
        if data.ndim:
            if encoding.get("zlib") or encoding.get("compression") == "gzip":
                options["compression"] = "gzip"
                level = encoding.get("complevel") or encoding.get("compression_opts")
                if level:  # none or 0: h5py's default level, as xarray leaves it
                    options["compression_opts"] = level
            if encoding.get("shuffle"):
                options["shuffle"] = True
            # a chunk shape read from a file holds only for the shape it was read with (as xarray does)
            if encoding.get("chunksizes") is not None and encoding.get("original_shape") == data.shape:
                options["chunks"] = tuple(encoding["chunksizes"])
        h5name = "_nc4_non_coord_" + k if k in sizes and k not in coordinates else k
        ds = group.create_dataset(
            h5name, data.shape, dtype=dtype, data=data, fillvalue=fill, track_order=True, **options
        )
        created[k] = (ds, v.dims, fill, var_attrs)
        if k in coordinates:
            scales[k] = ds
    for d, ds in scales.items():
        ds.attrs["_Netcdf4Dimid"] = np.int32(dimid[d])
        ds.make_scale(d if d in coordinates else _NOT_A_VARIABLE + b"%10d" % sizes[d])
    for k, (ds, dims, fill, var_attrs) in created.items():
        if k not in coordinates:  # a coordinate variable is a scale: NetCDF-4 attaches none to it
            for i, d in enumerate(dims):
                ds.dims[i].attach_scale(scales[d])
        if dims:
            ds.attrs["_Netcdf4Coordinates"] = np.array([dimid[d] for d in dims], dtype=np.int32)
        if dims and k not in coordinates:  # a scale has its own id already
            ds.attrs["_Netcdf4Dimid"] = np.int32(dimid[dims[0]])
        if fill is not None:
            _set_attrs(ds.attrs, {"_FillValue": fill if isinstance(fill, (str, bytes)) else ds.dtype.type(fill)})
        _set_attrs(ds.attrs, _checked_attrs(var_attrs, f"variable {k!r} of group {name!r}"))


def _set_attrs(h5attrs, attrs: dict) -> None:
    """Store attributes as h5netcdf does: a number as a one-element array (as netCDF-C reads and writes it), text
    and arrays as they are."""
    for key, value in attrs.items():
        if np.isscalar(value) and np.asarray(value).dtype.kind not in "SU":
            value = np.atleast_1d(value)
        h5attrs[key] = value


def _checked_attrs(attrs: dict, where: str) -> dict:
    """``attrs`` when NetCDF can hold every value (text, numbers, arrays and lists of them), as xarray checks before
    it writes; a boolean (HDF5 would store an enum NetCDF readers do not know) or another object is refused."""
    import numbers

    for key, value in attrs.items():
        ok = isinstance(value, (str, bytes, numbers.Number, np.ndarray, np.number, list, tuple))
        # a boolean is a number to Python, but its array kind is "b"; a list of other objects is an object array
        if not ok or np.asarray(value).dtype.kind not in "iufcUS":
            raise TypeError(f"attribute {key!r} of {where}: expected text or numbers, got {type(value).__name__}")
    return attrs


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
