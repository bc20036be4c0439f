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
