"""Strata of multimodal families, and the fine-grid validator of the sampled model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.tasks.hotspot.model.builder import (
    Component,
    SubjectData,
    build_model,
    split_component,
    whole_families,
)
from tests.tasks.hotspot.model.test_model import synthetic


@pytest.fixture(scope="module")
def tables():
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables

    return load_tables()


def test_split_component_partitions_the_prior():
    comps = whole_families(("PI", "EI", "UCB"))
    two = split_component(comps, 0, "tau", 0.4)
    three = split_component(two, 1, "param", 12.0)
    assert [c.family for c in three] == ["PI", "PI", "PI", "EI", "UCB"]
    assert [c.var_name for c in three[:3]] == ["xi_pi_s0", "xi_pi_s1", "xi_pi_s2"]
    assert len({c.label for c in three}) == 5
    # the strata's prior volumes add up to the family's
    assert np.exp([c.log_width_fraction for c in three[:3]]).sum() == pytest.approx(1.0)
    assert three[2].bounds("tau") == (0.4, pytest.approx(np.pi / 2)) and three[2].bounds("param") == (12.0, 30.0)
    with pytest.raises(ValueError, match="outside"):
        Component("PI").split("param", 31.0)


def test_split_point_finds_the_gap_between_modes():
    from ibo_pymc.engine.strata import split_point

    rng = np.random.default_rng(0)
    n = 4000
    bounds = {"param": (0.0, 30.0), "tau": (0.0, np.pi / 2)}
    # separated in tau (one mode at the boundary), overlapping in param: split tau
    tau = np.where(rng.random(n) < 0.2, np.abs(rng.normal(0, 0.08, n)), rng.normal(1.0, 0.05, n))
    param = np.where(tau < 0.5, rng.normal(16, 3, n), rng.normal(8, 3, n)).clip(0, 30)
    name, at = split_point({"param": param, "tau": tau}, bounds)
    assert name == "tau" and 0.25 < at < 0.85
    # one mode: nothing to split
    assert split_point({"param": rng.normal(10, 2, n), "tau": rng.normal(1.0, 0.1, n)}, bounds) is None
    # a 1% blip is not a mode
    blip = np.concatenate([rng.normal(10, 1, n), rng.normal(25, 0.2, 30)])
    assert split_point({"param": blip}, {"param": bounds["param"]}) is None


@pytest.mark.parametrize("model", ["tau", "tau_pm"])
def test_stratified_compiled_density_equals_pymc_model(model, tables):
    from ibo_pymc.tasks.hotspot.model import compiled

    sd = SubjectData.prepare(synthetic(50, tables=tables), model, tables)
    tau = "tau" if model == "tau" else "tau_pos"
    comps = split_component(split_component(whole_families(sd.families), 0, tau, 0.5), 1, "param", 11.0)
    m = build_model(sd, layout="stacked", components=comps)
    logp, dlogp = m.compile_logp(), m.compile_dlogp()
    _, blocks = compiled.pack(sd, "stacked", comps)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.normal(size=sum(b.size for b in blocks))
        point, j = {}, 0
        for b in blocks:
            point[f"{b.name}_interval__"] = x[j] if b.code == compiled.PARAM else x[j : j + b.size]
            j += b.size
        lp, g = compiled.density(sd, "stacked", x, comps)
        assert lp == pytest.approx(float(logp(point)), rel=1e-9)
        starts = np.cumsum([0] + [b.size for b in blocks])
        ours = {f"{b.name}_interval__": g[starts[i] : starts[i + 1]] for i, b in enumerate(blocks)}
        np.testing.assert_allclose(
            np.concatenate([np.atleast_1d(ours[v.name]) for v in m.value_vars]), dlogp(point), rtol=1e-6, atol=1e-6
        )


def test_fine_grid_kernel_matches_pointwise(tables):
    from ibo_pymc.tasks.hotspot.model import pointwise
    from ibo_pymc.tasks.hotspot.model.fine_grid import _grid_loglik
    from ibo_pymc.tasks.hotspot.model.lookup import lookup_numpy

    sd = SubjectData.prepare(synthetic(40, tables=tables), "tau", tables)
    params, taus = np.array([3.3, 17.9]), np.array([0.05, 0.61, 1.2])
    gammas, ws = np.array([0.02, 0.3, 0.78]), np.array([0.0, 0.37, 1.0])
    ts = lookup_numpy(sd.rt, "PI", params[:, None], taus[None, :])
    x = sd.theta2
    L = _grid_loglik(ts.reshape(6, -1), np.sin(x / 2), np.cos(x / 2), gammas, ws).reshape(2, 3, 3, 3)
    for a, p in enumerate(params):
        for b, t in enumerate(taus):
            for g_, gm in enumerate(gammas):
                for v, w in enumerate(ws):
                    ref = pointwise.loglik(sd, "PI", p, t, t, gm, w).sum()
                    assert L[a, b, g_, v] == pytest.approx(ref, rel=1e-9)


def test_fine_grid_evidence_matches_brute_force(tables):
    """Model u (3 parameters): the refined rule against a dense grid over the whole prior."""
    from ibo_pymc.tasks.hotspot.model.fine_grid import _grid_loglik, fine_grid_family
    from ibo_pymc.tasks.hotspot.model.lookup import lookup_numpy

    sd = SubjectData.prepare(
        synthetic(60, family="PI", param=9.0, gamma=0.25, w=0.7, seed=8, tables=tables), "u", tables
    )
    fg = fine_grid_family(sd, "PI")
    # dense midpoint rule: 600 x 400 x 300 over the prior (xi, gamma, w)
    xi = (np.arange(600) + 0.5) * 30 / 600
    lo, hi = 0.01, np.pi / 4
    gm = lo + (np.arange(400) + 0.5) * (hi - lo) / 400
    ws = (np.arange(300) + 0.5) / 300
    x = sd.theta2
    L = _grid_loglik(lookup_numpy(sd.rt, "PI", xi, np.zeros_like(xi)), np.sin(x / 2), np.cos(x / 2), gm, ws)
    m = L.max()
    log_z = m + np.log(np.exp(L - m).mean())  # mean over the prior = integral x uniform prior density
    assert fg.log_evidence == pytest.approx(log_z, abs=0.02)
    post = np.exp(L - m)
    post /= post.sum()
    assert fg.mean["param"] == pytest.approx((post.sum((1, 2)) * xi).sum(), abs=0.05)
    assert fg.mean["gamma"] == pytest.approx((post.sum((0, 2)) * gm).sum(), abs=2e-3)
    assert fg.mean["w"] == pytest.approx((post.sum((0, 1)) * ws).sum(), abs=2e-3)
    assert fg.levels >= 2  # it did refine


def test_small_fit_agrees_with_fine_grid(tables):
    from ibo_pymc.tasks.hotspot.model.fine_grid import compare_fit, fine_grid_posterior
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    m = IBOModel(
        synthetic(120, family="PI", param=6.0, tau=(0.3, 0.3), gamma=0.3, w=0.75, seed=2, tables=tables),
        "tau",
        draws=400,
        tune=400,
        chains=2,
        seed=3,
    )
    m.fit(progress=False)
    fine = fine_grid_posterior(m.sd)
    df = compare_fit(m.idata, fine)
    assert df["ok"].all(), df.to_string()
    # a family probability's tolerance: 0.02, or 3 standard errors from the evidences where that is more
    from ibo_pymc.tasks.hotspot.model.fine_grid import family_probability_errors

    se = family_probability_errors(m.idata)
    p = m.idata.posterior["family_prob"].mean(("chain", "draw")).to_series()
    assert (se >= 0).all() and se.max() > 0 and se.min() < 1e-6  # EI, at probability ~0, is certain
    for f in m.families:
        assert df.loc[f"P({f})", "tolerance"] == pytest.approx(max(0.02, 3 * se[f]))
        assert se[f] <= 0.5 * np.sqrt(p[f] * (1 - p[f]))  # delta method: at most P(1-P) x the errors
    # the log evidences of the two paths (bridge sampling; quadrature), per family and for the model
    from ibo_pymc.engine.results import log_evidence

    bridge, grid = log_evidence(m.idata), fine.log_evidence()
    assert list(bridge.index) == list(grid.index) == [*m.families, "all"]
    diff = (bridge["log_evidence"] - grid["log_evidence"]).abs()
    assert (diff <= 4 * bridge["error"] + 0.03).all(), pd.concat([bridge, grid, diff], axis=1).to_string()
