"""Writing fits: compact by default (log-likelihood packed in 16 bits, no posterior predictive), full on request,
atomic either way."""

from __future__ import annotations

import arviz as az
import h5py
import numpy as np
import pytest
import xarray as xr

from ibo_pymc.io import write_fit


def _idata(ll, seed=0):
    rng = np.random.default_rng(seed)
    C, D, N = ll.shape
    dims = {"chain": np.arange(C), "draw": np.arange(D), "unit": np.arange(N)}
    return az.InferenceData(
        posterior=xr.Dataset({"a": (("chain", "draw"), rng.normal(size=(C, D)))}, coords=dims),
        log_likelihood=xr.Dataset(
            {"y": (("chain", "draw", "unit"), ll), "flat": (("chain", "draw", "unit"), np.full(ll.shape, -1.5))},
            coords=dims,
        ),
        posterior_predictive=xr.Dataset({"y": (("chain", "draw", "unit"), rng.normal(size=ll.shape))}, coords=dims),
        observed_data=xr.Dataset({"y": ("unit", rng.normal(size=N))}, coords={"unit": np.arange(N)}),
    )


@pytest.mark.filterwarnings("ignore:Estimated shape parameter")
@pytest.mark.parametrize("scale", [1e-3, 1.0, 60.0])
def test_compact_fit_rounds_within_half_a_step_and_loo_agrees(tmp_path, scale):
    rng = np.random.default_rng(1)
    ll = -np.abs(rng.standard_t(3, size=(4, 500, 30))) * scale - 0.5
    idata = _idata(ll)
    path = write_fit(idata, tmp_path / "fit.nc")
    with h5py.File(path) as f:
        assert f["log_likelihood/y"].dtype == np.int16 and "posterior_predictive" not in f
    back = az.from_netcdf(str(path))
    step = (ll.max() - ll.min()) / 65532
    err = np.abs(back.log_likelihood["y"].values - ll)
    assert err.max() <= 0.5 * step * (1 + 1e-9) and err.max() > 0
    np.testing.assert_array_equal(back.log_likelihood["flat"].values, -1.5)  # a constant packs exactly
    a, b = az.loo(idata, var_name="y"), az.loo(back, var_name="y")
    assert abs(a.elpd_loo - b.elpd_loo) <= 0.5 * step * ll.shape[-1]
    # the in-memory fit is untouched: its group and its encodings
    assert "posterior_predictive" in idata.groups() and not idata.log_likelihood["y"].encoding


def test_full_fit_keeps_everything_in_float64(tmp_path):
    ll = -np.random.default_rng(2).gamma(2.0, size=(2, 100, 7))
    idata = _idata(ll)
    compact = write_fit(idata, tmp_path / "c.nc")
    # a fit read from a compact file and written in full is float64 again (no inherited int16 encoding)
    path = write_fit(az.from_netcdf(str(compact)), tmp_path / "f.nc", full=True)
    with h5py.File(path) as f:
        assert f["log_likelihood/y"].dtype == np.float64
    path = write_fit(idata, tmp_path / "full.nc", full=True)
    back = az.from_netcdf(str(path))
    np.testing.assert_array_equal(back.log_likelihood["y"].values, ll)
    np.testing.assert_array_equal(back.posterior_predictive["y"].values, idata.posterior_predictive["y"].values)


def test_values_that_do_not_pack_are_kept_as_they_are(tmp_path):
    ll = -np.random.default_rng(3).gamma(2.0, size=(2, 50, 5))
    ll[0, 0, 0] = -np.inf
    back = az.from_netcdf(str(write_fit(_idata(ll), tmp_path / "fit.nc")))
    np.testing.assert_array_equal(back.log_likelihood["y"].values, ll)
    assert [p.name for p in tmp_path.iterdir()] == ["fit.nc"]


def test_the_file_reads_back_as_xarray_writes_it(tmp_path):
    """write_fit writes through h5netcdf's API itself (xarray encodes): every dtype a fit holds (floats packed and
    not, integers, booleans, NumPy's fixed-width, variable-width and object strings, a coordinate that is not a
    dimension, attrs at the root and on groups and variables) reads back as from xarray's own writer."""
    from tests.fit_files import assert_writes_as_xarray

    rng = np.random.default_rng(4)
    idata = _idata(-rng.gamma(2.0, size=(2, 40, 6)))
    names = np.array(["UCB", "greedy"], dtype=np.dtypes.StringDType())
    sample_stats = xr.Dataset(
        {
            "diverging": (("chain", "draw"), rng.random((2, 40)) < 0.1),
            "depth": (("chain", "draw"), rng.integers(1, 6, size=(2, 40)).astype(np.uint64)),
            "component": (("chain", "draw"), names[rng.integers(0, 2, size=(2, 40))]),
        },
        coords={"chain": np.arange(2), "draw": np.arange(40)},
        attrs={"sampler": "nutpie", "tune": 300},
    )
    idata.add_groups(
        sample_stats=sample_stats,
        component_evidence=xr.Dataset(
            {
                "log_evidence": ("family", [-10.5, np.nan]),
                "label": ("family", np.array(["UCB", "greedy"], dtype=object)),
                "converged": ("family", [True, False]),
            },
            coords={"family": ["UCB", "greedy"], "kind": ("family", ["upper", "plain"])},
        ),
        warn_on_custom_groups=False,
    )
    idata.posterior["a"].attrs["units"] = "nats"
    idata.attrs["task"] = "bandit"
    assert {"sample_stats", "component_evidence"} <= set(idata.groups())
    assert_writes_as_xarray(idata, tmp_path)


def test_an_attribute_netcdf_cannot_hold_is_refused_and_nothing_is_written(tmp_path):
    idata = _idata(-np.random.default_rng(5).gamma(2.0, size=(2, 10, 3)))
    idata.posterior.attrs["converged"] = True
    with pytest.raises(TypeError, match="attribute 'converged' of group 'posterior': expected text or numbers"):
        write_fit(idata, tmp_path / "fit.nc")
    assert list(tmp_path.iterdir()) == []


def test_a_fit_read_back_cut_to_fewer_draws_is_written_again(tmp_path):
    """A chunk shape read from a file belongs to the shape it was read with: a subset is written without it."""
    idata = _idata(-np.random.default_rng(6).gamma(2.0, size=(2, 300, 40)))
    back = az.from_netcdf(str(write_fit(idata, tmp_path / "a.nc", full=True)))
    back.log_likelihood["y"].encoding.update(zlib=True, chunksizes=(1, 300, 40))
    back.posterior["a"].encoding.update(zlib=True, chunksizes=(2, 300))
    cut = back.isel(draw=slice(0, 5))
    again = az.from_netcdf(str(write_fit(cut, tmp_path / "b.nc", full=True)))
    np.testing.assert_array_equal(again.posterior["a"].values, idata.posterior["a"].values[:, :5])


def test_values_xarray_converts_on_writing_read_back_as_from_xarray(tmp_path):
    """What xarray's store converts before it writes (object arrays of text with gaps, of numbers, of bytes; bytes
    stored as characters; times; a nested list as an attribute), the writer converts the same way."""
    from tests.fit_files import assert_writes_as_xarray

    idata = _idata(-np.random.default_rng(7).gamma(2.0, size=(2, 10, 3)))
    extra = xr.Dataset(
        {
            "text_with_gaps": ("k", np.array(["UCB", None], dtype=object)),
            "numbers": ("k", np.array([1, 2], dtype=object)),
            "floats_with_gaps": ("k", np.array([1.5, None], dtype=object)),
            "bytes": ("k", np.array([b"ab", b"c"])),
            "when": ("k", np.array(["2026-11-30T01:00", "NaT"], dtype="datetime64[ns]")),
        },
        coords={"k": ["first", "second"]},
        attrs={"grid": [[1, 2], [3, 4]], "names": ["a", "b"]},
    )
    idata.add_groups(extra=extra, warn_on_custom_groups=False)
    assert_writes_as_xarray(idata, tmp_path)


@pytest.mark.parametrize("where", ["variable", "dimension"])
def test_a_name_with_a_slash_is_refused_and_nothing_is_written(tmp_path, where):
    """h5netcdf reads a slash as a path (a hidden subgroup, or a file no reader opens); xarray refuses it."""
    data = {"a/b": ("k", [1.0, 2.0])} if where == "variable" else {"v": ("k/j", [1.0, 2.0])}
    idata = az.InferenceData(posterior=xr.Dataset(data))
    with pytest.raises(ValueError, match="a name may not hold '/'"):
        write_fit(idata, tmp_path / "fit.nc")
    assert list(tmp_path.iterdir()) == []


def test_names_netcdf_4_treats_specially_read_back_as_from_xarray(tmp_path):
    """A coordinate of bytes (stored as characters: a scale of two dimensions) and a variable named as a dimension
    it does not lie along (NetCDF-4 stores it as ``_nc4_non_coord_NAME``) are written as xarray's store writes them:
    the same HDF5 layout (``hdf5_layout``, in ``assert_writes_as_xarray``) and the same values read back."""
    from tests.fit_files import assert_writes_as_xarray

    idata = _idata(-np.random.default_rng(8).gamma(2.0, size=(2, 10, 3)))
    extra = xr.Dataset(
        {"x": ("y", [1.0, 2.0]), "v": ("x", [1.0, 2.0, 3.0]), "w": ("k", [0.5, 1.5])},
        coords={"k": np.array([b"ab", b"c"])},
    )
    idata.add_groups(extra=extra, warn_on_custom_groups=False)
    assert_writes_as_xarray(idata, tmp_path)
    with h5py.File(tmp_path / "ours-False.nc") as f:
        assert "_nc4_non_coord_x" in f["extra"] and f["extra/k"].shape == (2, 2)


@pytest.mark.parametrize(
    "extra, needle",
    [
        # bytes of width 2 become characters along a dimension 'string2', which the data name with another size
        (
            xr.Dataset({"b": ("k", np.array([b"ab", b"c"])), "u": ("string2", [1, 2, 3, 4, 5])}),
            "dimension 'string2' has size 5 here and 2 elsewhere",
        ),
        (xr.Dataset({"v": ("x", np.array([], dtype=float))}), "dimension 'x' is empty"),
        (xr.Dataset({"z": ("x", [1 + 2j, 3j])}), "cannot write variable 'z' of group 'extra': dtype complex128"),
    ],
    ids=["two sizes", "empty", "complex"],
)
def test_what_no_fit_holds_is_refused_and_nothing_is_written(tmp_path, extra, needle):
    """A dimension of two sizes (the old path of h5netcdf refused it too; a file would be unreadable), an empty
    dimension (NetCDF-4 would make it unlimited) and complex numbers (h5netcdf's own compound type): refused with
    what is wrong, no file left."""
    idata = _idata(-np.random.default_rng(9).gamma(2.0, size=(2, 10, 3)))
    idata.add_groups(extra=extra, warn_on_custom_groups=False)
    with pytest.raises(ValueError, match=needle):
        write_fit(idata, tmp_path / "fit.nc")
    assert list(tmp_path.iterdir()) == []
