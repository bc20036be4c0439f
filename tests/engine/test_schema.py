"""The fit schema's reader: older files come back in the schema, bad files are refused in one line.

``data/gridsearch-format1.nc`` is a grid-search fit as the code before the engine (f9f5ba6) saved it: format 1,
conditional draws as ``<name>_given_family``, ``family_evidence``. It was made from a simulated participant on
synthetic reward grids (no study data): ``simulate_participant(GridTruth("UCB", 1.0, 0.5, 0.05, "BMT"),
uniform(0, 1, (4, 64)) grids, default_rng(5), subject=990, rounds=3)``, fitted with ``surrogate="BMT", draws=60,
tune=100, chains=2, ess=20, max_thin=1``.
"""

from __future__ import annotations

import json
from pathlib import Path

import arviz as az
import numpy as np
import pytest
import xarray as xr

import ibo_pymc as ibo
from ibo_pymc.engine.schema import FORMAT, read_fit, upgrade

OLD_GRID = Path(__file__).parent / "data" / "gridsearch-format1.nc"


def test_a_grid_fit_of_format_1_is_read_in_the_schema():
    old = az.from_netcdf(OLD_GRID)
    new = read_fit(OLD_GRID)
    assert {
        "posterior",
        "conditional_posterior",
        "log_likelihood",
        "component_evidence",
        "observed_data",
        "sample_stats",
    } <= set(new.groups())
    a = new.posterior.attrs
    assert (a["ibo_pymc_format"], a["task"], a["observed"], a["model"], a["subject"]) == (
        FORMAT,
        "gridsearch",
        "choices",
        "BMT",
        990,
    )
    # the same draws, the conditional ones under the schema's names
    for n in ("error_variance", "beta", "tau", "family_draw"):
        assert np.array_equal(new.posterior[n].values, old.posterior[n].values)
    assert np.array_equal(new["conditional_posterior"]["tau"].values, old.posterior["tau_given_family"].values)
    assert np.array_equal(new["conditional_posterior"]["beta"].values, old.posterior["beta_given_UCB"].values)
    # the same family probabilities, now read from component_evidence
    probs = json.loads(old.posterior.attrs["family_probabilities"])
    model = ibo.GridSearchModel.load(OLD_GRID)
    assert model.family_probabilities().to_dict() == pytest.approx(probs, abs=1e-12)
    # the old convergence names are read as the engine's
    assert (model.config.target_rhat, model.config.min_ess, model.config.surrogate) == (1.01, 20, "BMT")
    assert np.isfinite(new.posterior.attrs["log_evidence"])
    assert model.loo().n_data_points == 3


def test_a_hotspot_fit_gains_the_task_attrs():
    idata = az.InferenceData(
        posterior=xr.Dataset(
            {"gamma": (("chain", "draw"), np.zeros((1, 2)))}, attrs={"ibo_pymc_format": 3, "subject": 28}
        )
    )
    out = upgrade(idata)
    assert out.posterior.attrs["task"] == "hotspot" and out.posterior.attrs["observed"] == "theta2"


def test_files_that_are_not_fits_are_refused(tmp_path):
    with pytest.raises(ibo.InputError, match="no such file"):
        read_fit(tmp_path / "missing.nc")
    (tmp_path / "text.nc").write_text("not a netcdf")
    with pytest.raises(ibo.InputError, match="cannot read NetCDF"):
        read_fit(tmp_path / "text.nc")
    az.InferenceData(posterior=xr.Dataset({"x": (("chain", "draw"), np.zeros((1, 2)))})).to_netcdf(
        str(tmp_path / "other.nc"), engine="h5netcdf"
    )
    with pytest.raises(ibo.InputError, match="not an ibo-pymc fit"):
        read_fit(tmp_path / "other.nc")
    with pytest.raises(ibo.InputError, match="'gridsearch' task, not of 'hotspot'"):
        type("HotspotLike", (ibo.IBOModelBase,), {"task": "hotspot"}).load(OLD_GRID)


def test_an_older_fit_is_reused_where_it_matches(tmp_path):
    """fit_or_load reuses a saved fit of the same observations and configuration, older formats included."""
    import shutil

    path = tmp_path / "fit.nc"
    shutil.copy(OLD_GRID, path)
    saved = ibo.GridSearchModel.load(path)
    stamp = path.stat().st_mtime_ns
    again = ibo.GridSearchModel.fit_or_load(saved.obs, saved.config.replace(cores=1), path)
    assert path.stat().st_mtime_ns == stamp  # not refitted
    assert np.array_equal(again.idata.posterior["tau"].values, saved.idata.posterior["tau"].values)
