"""Test helper: a fit written by :func:`ibo_pymc.io.write_fit` reads back as the file xarray's own writer makes.

``write_fit`` encodes each group with xarray's CF encoder but writes it through h5netcdf's API itself; the
reference here is the same groups and encodings written by ``xarray.DataTree.to_netcdf(engine="h5netcdf")``.
"""

from __future__ import annotations

import arviz as az
import h5py
import numpy as np
import xarray as xr

from ibo_pymc import io

#: what a variable's on-disk encoding must agree on (the rest, such as h5py's chunk shape, is the library's choice)
_ENCODING = ("dtype", "scale_factor", "add_offset", "_FillValue", "zlib", "shuffle", "complevel", "coordinates")


def _reference(idata, path, full: bool) -> None:
    groups = {}
    for g in idata.groups():
        if not full and g in io.ON_DEMAND_GROUPS:
            continue
        ds = idata[g]
        if g in io.PACKED_GROUPS:
            enc = {name: {} for name in ds.data_vars} if full else io._packing(ds)
            ds = ds.copy()
            for name in ds.data_vars:
                ds[name] = ds[name].copy()
                ds[name].encoding = dict(enc[name])
        groups[g] = ds
    tree = xr.DataTree.from_dict(groups)
    tree.attrs = dict(getattr(idata, "attrs", {}) or {})
    tree.to_netcdf(str(path), engine="h5netcdf")


def assert_writes_as_xarray(idata, folder) -> None:
    """Compact and full: the same groups, attrs, values, dtypes, coordinates and encodings as the reference."""
    for full in (False, True):
        ours = io.write_fit(idata, folder / f"ours-{full}.nc", full=full)
        ref = folder / f"xarray-{full}.nc"
        _reference(idata, ref, full)
        a, b = az.from_netcdf(str(ours)), az.from_netcdf(str(ref))
        assert a.groups() == b.groups()
        assert dict(a.attrs) == dict(b.attrs)
        for g in a.groups():
            xr.testing.assert_identical(a[g], b[g])
            for name, v in a[g].variables.items():
                w = b[g][name]
                assert v.dtype == w.dtype, (g, name, v.dtype, w.dtype)
                ea = {k: v.encoding.get(k) for k in _ENCODING}
                eb = {k: w.encoding.get(k) for k in _ENCODING}
                assert repr(ea) == repr(eb), (g, name, ea, eb)  # repr: a NaN fill value equals itself
        assert hdf5_layout(ours) == hdf5_layout(ref)
        with xr.open_datatree(ours, engine="h5netcdf") as ta, xr.open_datatree(ref, engine="h5netcdf") as tb:
            for g in ta.children:
                for name in ta[g].variables:
                    x, y = ta[g][name].values, tb[g][name].values
                    assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind in "fcmM"), (g, name)


def hdf5_layout(path) -> dict:
    """The file's HDF5 structure as NetCDF-4 readers see it: per dataset its shape, dtype, chunks, filters, fill
    value and attributes, dimension scales' references by the names they point at and NetCDF-4's dimension ids
    (``_Netcdf4Dimid``, ``_Netcdf4Coordinates``) by the dimensions they number; the root's attributes but the
    writer's name in ``_NCProperties``. (Creation order is left out, and with it the ids' numbering: xarray's
    store creates a group's variables and dimensions in an order of its own; readers list them in creation order
    and compare them by name.)"""

    def value(f, a):
        if isinstance(a, np.ndarray) and a.dtype.names == ("dataset", "dimension"):  # REFERENCE_LIST
            return sorted((f[r].name, int(i)) for r, i in a)
        if isinstance(a, np.ndarray) and a.dtype.kind == "O" and a.size and isinstance(a.flat[0], np.ndarray):
            return [[f[r].name for r in refs] for refs in a]  # DIMENSION_LIST
        return repr(a.tolist() if isinstance(a, np.ndarray) else a)

    out = {}
    with h5py.File(path, "r") as f:
        dims = {}  # NetCDF-4 dimension id -> the scale's path

        def scales(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.attrs.get("CLASS") == b"DIMENSION_SCALE":
                dims[int(obj.attrs["_Netcdf4Dimid"])] = obj.name

        f.visititems(scales)

        def attr(k, a):
            if k == "_Netcdf4Dimid":
                return dims[int(a)]
            if k == "_Netcdf4Coordinates":
                return [dims[int(i)] for i in a]
            return value(f, a)

        props = f.attrs["_NCProperties"].decode()
        out["/"] = {
            "_NCProperties": (props.split(",")[0], [p.split("=")[0] for p in props.split(",")[2:]]),
            **{k: value(f, a) for k, a in f.attrs.items() if k != "_NCProperties"},
        }

        def visit(name, obj):
            if isinstance(obj, h5py.Group):
                out[name] = {k: value(f, a) for k, a in obj.attrs.items()}
                return
            out[name] = {
                "shape": obj.shape,
                "dtype": repr(obj.dtype),
                "string": h5py.check_string_dtype(obj.dtype),
                "chunks": obj.chunks,
                "maxshape": obj.maxshape,
                "filters": (obj.compression, obj.compression_opts, obj.shuffle, obj.fletcher32, obj.scaleoffset),
                "fillvalue": repr(obj.fillvalue),
                "attrs": {k: attr(k, a) for k, a in obj.attrs.items()},
            }

        f.visititems(visit)
    return out
