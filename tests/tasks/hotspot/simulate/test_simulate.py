"""Simulators, the coverage study and SBC."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from ibo_pymc.tasks.hotspot.kernel import logpdf as wrapped_cauchy_mixture_logpdf
from ibo_pymc.tasks.hotspot.simulate.moves import Truth, simulate_moves


@pytest.fixture(scope="module")
def tables():
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables

    return load_tables()


def test_simulated_moves_have_the_stated_distribution(tables):
    truth = Truth("UCB", 0.8, gamma=0.3, w=0.7, tau_neg=0.4, tau_pos=0.2)
    obs = simulate_moves(truth, 20_000, 7, tables=tables)
    d, x = obs.delta_r1, obs.theta2
    assert d.min() >= -34 and d.max() <= 34 and abs(d.mean()) < 0.5
    assert np.all((x > -np.pi) & (x <= np.pi))
    ts = tables.theta_star("UCB", 0.8, d, tau=0.2, tau_neg=0.4)

    # maximum likelihood of (gamma, w) with the true curve recovers the truth
    def nll(v):
        return -wrapped_cauchy_mixture_logpdf(x, ts, v[0], v[1]).sum()

    res = optimize.minimize(nll, [0.5, 0.5], bounds=[(0.01, 1.5), (0.01, 0.99)])
    assert res.x[0] == pytest.approx(0.3, abs=0.01)
    assert res.x[1] == pytest.approx(0.7, abs=0.015)
    # the same seed gives the same data
    again = simulate_moves(truth, 20_000, 7, tables=tables)
    np.testing.assert_array_equal(again.theta2, x)


def test_coverage_cell_small():
    from concurrent.futures import ProcessPoolExecutor

    from ibo_pymc.tasks.hotspot.simulate.coverage import coverage

    cell = coverage("UCB", 0.99, 100, 40, gamma=0.28, seed=3)
    assert cell.reps == 40 and 0.8 <= cell.rate() <= 1.0 and set(cell.hits) == {"truth", "gamma"}
    assert cell.mcse() == pytest.approx(np.sqrt(max(cell.rate() * (1 - cell.rate()), 1 / 40) / 40))
    with ProcessPoolExecutor(2) as ex:
        again = coverage("UCB", 0.99, 100, 40, gamma=0.28, seed=3, executor=ex)
    assert again.hits == cell.hits  # the same seeds whatever the executor and its batches
    # the range rule covers whenever the own-cell rule does
    cell_rule = coverage("UCB", 0.99, 100, 40, gamma=0.28, seed=3, rule="cell")
    assert cell_rule.hits["truth"] <= cell.hits["truth"]
    omitted = coverage("PI", 15.0, 100, 20, gamma=0.28, seed=3, omit=True)
    assert set(omitted.hits) == {"EI", "UCB"}
    with pytest.raises(ValueError, match="rule"):
        coverage("PI", 15.0, 10, 2, gamma=0.28, rule="nearest")


def test_sbc_replicate_and_uniformity():
    from ibo_pymc.engine.calibration import uniformity
    from ibo_pymc.tasks.hotspot.simulate.sbc import sbc_replicate

    r = sbc_replicate("tau_pm", 5, n_obs=40, n_ranks=49, draws=200, tune=200)
    for q in ("xi_pi", "xi_ei", "p_ucb", "gamma", "w", "tau_neg", "tau_pos", "family_draw"):
        assert 0 <= r[q] <= 49
    rng = np.random.default_rng(0)
    flat = pd.DataFrame(
        {"a": rng.integers(0, 100, 2000), "b": np.r_[rng.integers(0, 20, 1000), rng.integers(80, 100, 1000)]}
    )
    u = uniformity(flat)
    assert u.loc["a", "p_value"] > 0.01 and u.loc["b", "p_value"] < 1e-6


def test_cli_coverage(tmp_path):
    out = tmp_path / "cell.csv"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ibo_pymc.cli.simulate",
            "coverage",
            "--family",
            "PI",
            "--param",
            "15",
            "--n-obs",
            "50",
            "--reps",
            "20",
            "--workers",
            "1",
            "--csv",
            str(out),
            "--quiet",
            "--protocol",
            "text",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert "true function covered by the 95% set" in r.stdout and "MC se" in r.stdout
    assert "gamma = 0.2500 covered" in r.stdout
    assert pd.read_csv(out)["reps"].iloc[0] == 20
    bad = subprocess.run(
        [sys.executable, "-m", "ibo_pymc.cli.simulate", "coverage", "--family", "PI", "--param", "45", "--n-obs", "10"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "--param" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "ibo_pymc.cli.simulate",
            "coverage",
            "--family",
            "PI",
            "--param",
            "4",
            "--n-obs",
            "10",
            "--gamma",
            "zero",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "--gamma" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_task_simulator_logs_round_trip_through_the_data_layer(tmp_path, tables):
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.simulate.task import write_cohort

    truths = {101: Truth("UCB", 0.8, 0.2, 0.7, 0.3, 0.1), 102: Truth("PI", 5.0)}
    sim = write_cohort(tmp_path, truths, 50, seed=1, tables=tables)
    data = load_hotspot(tmp_path)
    r = data.rounds.merge(sim, on="session_id", suffixes=("", "_sim"))
    assert len(r) == 100
    np.testing.assert_allclose(r["delta_r1"], r["delta_r1_sim"], atol=1e-5)
    np.testing.assert_allclose(np.angle(np.exp(1j * (r["theta2"] - r["theta2_sim"]))), 0.0, atol=1e-6)
    assert set(r["num_moves"]) <= set(range(3, 11)) and (r["k"] <= 5 / 3).all()
    assert (data.exclusion_counts()["burn_in"] == 20).all()
    truth = pd.read_csv(tmp_path / "truth.csv")
    assert list(truth["family"]) == ["UCB", "PI"]


def test_demo_cohort_is_the_documented_simulation(tmp_path, monkeypatch):
    """--data demo is exactly what `ibo-simulate demo` writes, generated into the per-user cache once."""
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.datasets import resolve_data_dir
    from ibo_pymc.tasks.hotspot.simulate.task import DEMO_TRUTHS, write_demo

    monkeypatch.setenv("IBO_CACHE_DIR", str(tmp_path / "cache"))
    demo = resolve_data_dir("demo", progress=False)
    assert demo.parent == tmp_path / "cache"
    write_demo(tmp_path / "again")
    names = sorted(p.name for p in demo.iterdir())
    assert names == sorted(p.name for p in (tmp_path / "again").iterdir())
    assert len(names) == 2 * len(DEMO_TRUTHS) + 1 and "truth.csv" in names
    for name in names:
        assert (demo / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    data = load_hotspot(demo)
    assert len(data.subjects) == len(DEMO_TRUTHS)
    truth = pd.read_csv(demo / "truth.csv")
    assert list(truth["family"]) == [t.family for _, t in sorted(DEMO_TRUTHS.items())]
    # a second use reads the cache, and no temporary folder is left beside it
    stamp = (demo / "truth.csv").stat().st_mtime_ns
    assert resolve_data_dir("demo", progress=False) == demo
    assert (demo / "truth.csv").stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [demo.name]


def test_credible_cells_are_the_highest_mass_cells():
    from ibo_pymc.tasks.hotspot.simulate.coverage import credible_cells

    post = np.array([[0.5, 0.02], [0.3, 0.18]])
    keep = credible_cells(post, 0.95)
    np.testing.assert_array_equal(keep, [[True, False], [True, True]])  # 0.5 + 0.3 + 0.18 >= 0.95
    assert credible_cells(post, 0.5).sum() == 1
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(60)).reshape(3, 4, 5)
    k = credible_cells(p, 0.9)
    assert p[k].sum() >= 0.9 and p[k].sum() - p[k].min() < 0.9 and p[k].min() >= p[~k].max()


def test_exact_simulation_uses_the_grid_search_argmax(tables):
    from ibo_pymc.tasks.hotspot.forward.argmax import argmax_curve

    truth = Truth("EI", 15.0, gamma=0.01, w=1.0, tau_neg=0.3, tau_pos=0.6)
    exact = simulate_moves(truth, 400, 4, tables=tables, exact=True)
    interp = simulate_moves(truth, 400, 4, tables=tables)
    np.testing.assert_array_equal(exact.delta_r1, interp.delta_r1)  # same draws of delta_r1
    ts = argmax_curve("EI", 15.0, exact.delta_r1, tau=0.6, negative_tau=0.3, theta=tables.config.theta)
    # gamma = 0.01: the draws sit on the exact curve, within the tables' interpolation error of the other
    assert np.median(np.abs(np.angle(np.exp(1j * (exact.theta2 - ts))))) < 0.02
    assert 0 < np.median(np.abs(exact.theta2 - interp.theta2)) < 0.05
