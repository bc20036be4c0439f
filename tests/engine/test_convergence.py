"""The convergence diagnostics are ArviZ's estimators (computed without its per-process Numba compile)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from ibo_pymc.engine.convergence import diagnose_variable, ess_bulk, ess_tail, rhat, worst


def _draws():
    rng = np.random.default_rng(3)
    out = []
    for i in range(60):
        chains, draws = int(rng.integers(2, 6)), int(rng.integers(20, 1200))
        if i % 3 == 0:  # heavy tails
            out.append(rng.standard_cauchy((chains, draws)))
        else:  # autocorrelated, chains with different locations
            walk = np.cumsum(rng.normal(size=(chains, draws)), axis=1) * rng.uniform(0, 1)
            out.append(walk + rng.normal(size=(chains, draws)) + rng.normal(size=(chains, 1)))
    return out


@pytest.mark.parametrize("x", _draws(), ids=lambda x: "x".join(map(str, x.shape)))
def test_equal_to_arviz(x):
    assert rhat(x) == pytest.approx(float(az.rhat(x)), rel=1e-12)
    assert ess_bulk(x) == pytest.approx(float(az.ess(x, method="bulk")), rel=1e-12)
    assert ess_tail(x) == pytest.approx(float(az.ess(x, method="tail")), rel=1e-12)


def test_a_constant_quantity_has_no_rhat_as_in_arviz():
    x = np.full((4, 100), 0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(rhat(x)) and np.isnan(float(az.rhat(x)))


def test_variables_and_the_worst_over_a_posterior_as_arviz_summary():
    rng = np.random.default_rng(0)
    post = xr.Dataset(
        {
            "a": (("chain", "draw"), rng.normal(size=(4, 300))),
            # another dimension, stored before chain and draw: each element diagnosed on its own
            "b": (("family", "chain", "draw"), np.cumsum(rng.normal(size=(3, 4, 300)), axis=2)),
        },
        coords={"family": ["EI", "PI", "UCB"]},
    )
    r, eb, et = diagnose_variable(post["b"])
    assert r.shape == eb.shape == et.shape == (3,)
    for i in range(3):
        x = post["b"].isel(family=i).values
        assert r[i] == pytest.approx(float(az.rhat(x)), rel=1e-12)
        assert et[i] == pytest.approx(float(az.ess(x, method="tail")), rel=1e-12)
    s = az.summary(post, kind="diagnostics", round_to="none")
    w = worst(post, ["a", "b"])
    assert w["r_hat"] == pytest.approx(s["r_hat"].max(), rel=1e-12)
    assert w["ess_bulk"] == pytest.approx(s["ess_bulk"].min(), rel=1e-12)
    assert w["ess_tail"] == pytest.approx(s["ess_tail"].min(), rel=1e-12)
    assert w["r_hat"] > 1.05  # the random walks have not mixed: the worst is theirs, not a's
