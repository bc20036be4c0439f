"""Forward model: surrogate, acquisition functions, augmentation, argmax tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ibo_pymc.tasks.hotspot.forward import (
    AcquisitionFamily,
    Surrogate,
    TableConfig,
    allowed_mask,
    argmax_curve,
    augment,
    build_tables,
    closed_form_theta_star,
    get_family,
    load_tables,
    register_family,
    unregister_family,
)
from ibo_pymc.tasks.hotspot.forward.acquisition import (
    ei_log_value,
    ei_value,
    incumbent,
    pi_log_value,
    pi_value,
    ucb_value,
)

STEP = np.pi / 179


@pytest.fixture(scope="module")
def tables():
    return build_tables(TableConfig())


def test_surrogate_matches_matrix_algebra():
    s = Surrogate(sigma_s=0.01, sigma_beta=1.0)
    X = np.array([[0.0, 0.0], [20.0, 0.0]])
    for d in (-12.5, 0.0, 7.25):
        y = np.array([0.0, d])
        prec = X.T @ X / 0.01**2 + np.eye(2)
        cov = np.linalg.inv(prec)
        mean = cov @ X.T @ y / 0.01**2
        assert np.allclose(s.posterior_cov, cov)
        assert np.allclose(s.posterior_mean(d), mean)
        theta = np.linspace(-np.pi, np.pi, 11)
        m = np.stack([20 + 20 * np.cos(theta), 20 * np.sin(theta)], 1)
        mu, sd = s.predict(theta, d)
        assert np.allclose(mu, m @ mean)
        assert np.allclose(sd, np.sqrt(np.einsum("ti,ij,tj->t", m, cov, m) + 0.01**2))
    # vectorised over many delta_r1 at once
    d = np.linspace(-30, 30, 7)
    mu, sd = s.predict_grid(np.linspace(0, np.pi, 5), d)
    assert mu.shape == (7, 5)
    mu2, sd2 = s.predict(np.linspace(0, np.pi, 5)[None, :], d[:, None])
    assert np.allclose(mu, mu2) and np.allclose(sd, sd2)


def test_acquisition_values_against_scipy():
    rng = np.random.default_rng(1)
    mu = rng.normal(0, 10, 50)
    sd = rng.uniform(0.5, 20, 50)
    fb = np.maximum(0, rng.normal(0, 10, 50))
    xi = rng.uniform(0, 30, 50)
    z = (mu - fb - xi) / sd
    assert np.allclose(pi_value(mu, sd, fb, xi), stats.norm.cdf(z))
    assert np.allclose(ei_value(mu, sd, fb, xi), sd * (z * stats.norm.cdf(z) + stats.norm.pdf(z)))
    p = rng.uniform(0.5, 0.99, 50)
    assert np.allclose(ucb_value(mu, sd, fb, p), stats.norm.ppf(p, mu, sd))
    # the log forms used for argmax searches are the logs of the values
    assert np.allclose(pi_log_value(mu, sd, fb, xi), stats.norm.logcdf(z))
    ok = ei_value(mu, sd, fb, xi) > 1e-250
    assert np.allclose(ei_log_value(mu, sd, fb, xi)[ok], np.log(ei_value(mu, sd, fb, xi)[ok]), rtol=1e-9)
    # and stay finite far below the incumbent where the values underflow
    assert np.isfinite(ei_log_value(np.array([-300.0]), np.array([0.01]), np.array([0.0]), np.array([30.0]))).all()


def test_ei_log_value_finite_and_exact_far_above_the_incumbent():
    # z from -40 to 400: the log form stays finite, increasing, and equal to log EI
    z = np.concatenate([np.linspace(-40, 40, 801), np.geomspace(41, 400, 50)])
    sd = np.full_like(z, 0.3)
    mu = z * sd
    lv = ei_log_value(mu, sd, np.zeros_like(z), np.zeros_like(z))
    assert np.isfinite(lv).all()
    assert (np.diff(lv) > 0).all()
    ev = ei_value(mu, sd, np.zeros_like(z), np.zeros_like(z))
    ok = ev > 1e-250
    assert np.allclose(lv[ok], np.log(ev[ok]), rtol=1e-12, atol=1e-12)


def test_ei_table_is_the_argmax_of_ei_itself(tables):
    # the argmax search on log EI picks the same angle as one on EI wherever EI is representable
    c = tables.config
    fam = get_family("EI")
    xs = c.params("EI")
    mean, sd = Surrogate().predict_grid(c.theta, c.delta_r1)
    vals = ei_value(mean[None], sd[None], incumbent(c.delta_r1)[None, :, None], xs[:, None, None])
    tau0 = int(np.argmin(c.tau))
    direct = c.theta[np.argmax(vals, axis=-1)]
    fine = vals.max(axis=-1) > 1e-250
    assert fine.mean() > 0.9
    assert np.array_equal(tables.table("EI")[:, tau0, :][fine], direct[fine])
    assert fam.log_value is ei_log_value


@pytest.mark.parametrize("family", ["UCB", "PI"])
def test_lookup_matches_closed_form(tables, family):
    c = tables.config
    cf = closed_form_theta_star(family, c.params(family)[:, None], c.delta_r1[None, :])
    tau0 = int(np.argmin(c.tau))
    err = np.abs(tables.table(family)[:, tau0, :] - cf)
    # within half an angle step (1% slack for the tiny sigma_s terms the closed form drops)
    assert err.max() <= 0.51 * STEP


def test_pi0_and_ucb05_curves_identical(tables):
    assert np.array_equal(tables.table("PI")[0], tables.table("UCB")[0])


def test_symmetry_in_theta():
    s = Surrogate()
    theta = np.linspace(0, np.pi, 37)
    for d in (-10.0, 0.0, 10.0):
        for fam, par in (("PI", 5.0), ("EI", 5.0), ("UCB", 0.8)):
            f = get_family(fam)
            mu1, sd1 = s.predict(theta, d)
            mu2, sd2 = s.predict(-theta, d)
            assert np.allclose(f.value(mu1, sd1, max(0, d), par), f.value(mu2, sd2, max(0, d), par))


def test_augmentation_tau0_no_change_and_tau_half_pi_pure_exploration():
    theta = np.linspace(0, np.pi, 180)
    d = np.array([-15.0, -2.0, 2.0, 15.0])
    for rule in ("reference", "paper"):
        base = argmax_curve("UCB", 0.7, d, tau=0.0, theta=theta, rule=rule)
        assert np.allclose(base, closed_form_theta_star("UCB", 0.7, d), atol=STEP)
        assert allowed_mask(theta, 0.0, d, rule).all()
        # tau = pi/2: the argmax sits at (or next to) pi/2 for both signs of delta_r1
        explore = argmax_curve("UCB", 0.5, d, tau=np.pi / 2, theta=theta, rule=rule)
        assert np.allclose(explore, np.pi / 2, atol=1.01 * STEP), (rule, explore)
    # paper rule: positive delta_r1 forbids |theta| <= tau, negative forbids |theta| >= pi - tau
    m = allowed_mask(theta, 0.5, np.array([3.0, -3.0]), "paper")
    assert not m[0, theta <= 0.5].any() and m[0, theta > 0.5].all()
    assert not m[1, theta >= np.pi - 0.5].any() and m[1, theta < np.pi - 0.5].all()
    # disallowed angles take the minimum value
    vals = np.random.default_rng(0).normal(size=(2, 180))
    aug = augment(vals, theta, 0.5, np.array([3.0, -3.0]), "paper")
    assert np.allclose(aug[~m], vals.min()) and np.allclose(aug[m], vals[m])


def test_tau_pm_uses_tau_neg_for_negative_delta_r1(tables):
    d = np.array([-10.0, 10.0])
    both = tables.theta_star("UCB", 0.5, d, tau=0.0, tau_neg=np.pi / 2)
    assert abs(both[0] - np.pi / 2) < STEP and abs(both[1]) < STEP


def test_tables_shape_coords_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IBO_TABLE_DIR", str(tmp_path))
    cfg = TableConfig(n_param=5, n_tau=4, n_theta=60)
    t = load_tables(cfg)
    da = t.data
    assert da.dims == ("family", "param_index", "tau", "delta_r1")
    assert da.sizes == {"family": 3, "param_index": 5, "tau": 4, "delta_r1": 137}
    assert list(da["family"].values) == ["PI", "EI", "UCB"]
    assert np.allclose(da["param"].sel(family="UCB"), np.linspace(0.5, 0.99, 5))
    files = list(tmp_path.glob("argmax-*.npy"))
    assert len(files) == 1
    from ibo_pymc.tasks.hotspot.forward import argmax as argmax_mod

    argmax_mod._MEMORY.clear()
    t2 = load_tables(cfg)
    assert np.array_equal(t2.values, t.values)
    assert TableConfig(n_tau=29).key() != TableConfig().key()


def test_ei_tables_are_not_pi_tables():
    t = build_tables(TableConfig(n_param=5, n_tau=2))
    assert not np.array_equal(t.table("EI"), t.table("PI"))


def test_config_of_an_ei_as_pi_fit_is_refused():
    d = TableConfig().to_dict()
    assert "ei_as_pi" not in d
    assert TableConfig.from_dict({**d, "ei_as_pi": False}) == TableConfig()
    with pytest.raises(ValueError, match="PI formula"):
        TableConfig.from_dict({**d, "ei_as_pi": True})


def test_user_registered_family_flows_to_tables():
    def greedy_sideways(mu, sd, f_best, k):
        # a toy family: the mean plus k times the sd (a UCB with an unscaled bonus)
        return mu + k * sd

    fam = AcquisitionFamily("SIDE", "k", (0.0, 2.0), greedy_sideways, n_grid=5)
    register_family(fam)
    try:
        with pytest.raises(ValueError):
            register_family(fam)
        cfg = TableConfig(families=("UCB", "SIDE"), n_param=5, n_tau=2)
        t = build_tables(cfg)
        assert t.data.sizes["family"] == 2
        # k = 0 is the pure-exploitation curve, like UCB(0.5)
        assert np.array_equal(t.table("SIDE")[0], t.table("UCB")[0])
        # k > 0 explores more: a larger angle for delta_r1 > 0
        d = t.config.delta_r1
        assert (t.table("SIDE")[-1, 0, d > 1] > t.table("SIDE")[0, 0, d > 1]).all()
        from ibo_pymc.tasks.hotspot.paper_grid import fit_paper_grid

        rng = np.random.default_rng(3)
        dr = rng.uniform(-30, 30, 40)
        fit = fit_paper_grid(dr, rng.uniform(-np.pi, np.pi, 40), "u", tables=t)
        assert set(fit.family_probabilities().index) == {"UCB", "SIDE"}
    finally:
        unregister_family("SIDE")


def test_user_family_travels_with_the_configuration_to_a_fresh_process(tmp_path):
    """A fresh process that never ran the registration rebuilds the family from the saved configuration."""
    import json
    import subprocess
    import sys

    src = "def wide(mu, sd, f_best, k):\n    return mu + 3.0 * k * sd\n"
    ns = {"__name__": "__main__"}
    exec(src, ns)  # a function of the user's session, as in a notebook
    register_family(AcquisitionFamily("WIDE", "k", (0.0, 1.0), ns["wide"], n_grid=4))
    try:
        cfg = TableConfig(families=("UCB", "WIDE"), n_param=4, n_tau=2)
        want = build_tables(cfg).table("WIDE")
        d = cfg.to_dict()
        assert set(d["user_families"]) == {"WIDE"}
        (tmp_path / "cfg.json").write_text(json.dumps(d))
        np.save(tmp_path / "want.npy", want)
        code = (
            "import json, sys, numpy as np\n"
            "from ibo_pymc.tasks.hotspot.forward.argmax import TableConfig, build_tables\n"
            f"cfg = TableConfig.from_dict(json.load(open({str(tmp_path / 'cfg.json')!r})))\n"
            f"np.testing.assert_array_equal(build_tables(cfg).table('WIDE'), np.load({str(tmp_path / 'want.npy')!r}))\n"
            "print('ok', cfg.key())\n"
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["ok", cfg.key()]  # the same tables key in the fresh process
        # another definition under the same name is refused, not silently used
        register_family(
            AcquisitionFamily("WIDE", "k", (0.0, 1.0), lambda mu, sd, f, k: mu - k * sd, n_grid=4), replace=True
        )
        with pytest.raises(ValueError, match="another definition"):
            TableConfig.from_dict(d)
    finally:
        unregister_family("WIDE")


def test_table_cache_key_follows_what_a_family_computes():
    """Re-registering a family under the same name with another value function changes the tables' key."""

    def bonus(mu, sd, f_best, k):
        return mu + k * sd

    def bigger_bonus(mu, sd, f_best, k):
        return mu + 2.0 * k * sd

    keys = []
    try:
        for fn in (bonus, bigger_bonus, bonus):
            register_family(AcquisitionFamily("SIDE", "k", (0.0, 2.0), fn, n_grid=5), replace=True)
            keys.append(TableConfig(families=("UCB", "SIDE"), n_param=5, n_tau=2).key())
    finally:
        unregister_family("SIDE")
    assert keys[0] != keys[1] and keys[0] == keys[2]
    # the built-in families' key is stable within a run and differs from any other configuration
    assert TableConfig().key() == TableConfig().key() != TableConfig(n_tau=29).key()


def test_theta_star_interpolates_between_knots(tables):
    t = tables
    d = np.array([3.25])
    lo = t.theta_star("UCB", 0.75, np.array([3.0]))
    hi = t.theta_star("UCB", 0.75, np.array([3.5]))
    mid = t.theta_star("UCB", 0.75, d)
    assert np.allclose(mid, (lo + hi) / 2)
