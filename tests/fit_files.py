"""Test helper: a fit written by :func:`ibo_pymc.io.write_fit` reads back as the file xarray's own writer makes.

``write_fit`` encodes each group with xarray's CF encoder but writes it through h5netcdf's API itself; the
reference here is the same groups and encodings written by ``xarray.DataTree.to_netcdf(engine="h5netcdf")``.
"""

from __future__ import annotations

import arviz as az
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
        with xr.open_datatree(ours, engine="h5netcdf") as ta, xr.open_datatree(ref, engine="h5netcdf") as tb:
            for g in ta.children:
                for name in ta[g].variables:
                    x, y = ta[g][name].values, tb[g][name].values
                    assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind in "fcmM"), (g, name)
