"""The PyMC model: lookup, wrapped-Cauchy mixture, fused Op, compiled density, fit, save/load, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
from ibo_pymc.tasks.hotspot.model.builder import SubjectData, build_model
from ibo_pymc.tasks.hotspot.model.likelihood import (
    WrappedCauchyMixture,
    wc_mixture_logp,
    wc_mixture_logp_numpy,
    wc_mixture_random,
)
from ibo_pymc.tasks.hotspot.model.lookup import (
    RoundTables,
    lookup_numpy,
    lookup_pytensor,
)

RNG = np.random.default_rng(20260522)


def scipy_mixture_logpdf(x, ts, g, w):
    rho = np.exp(-g)
    # scipy's wrapcauchy lives on [0, 2 pi): shift by the location and wrap
    p = w * stats.wrapcauchy.pdf(np.mod(x - ts, 2 * np.pi), rho) + (1 - w) * stats.wrapcauchy.pdf(
        np.mod(x + ts, 2 * np.pi), rho
    )
    return np.log(p)


@pytest.fixture(scope="module")
def tables():
    return load_tables()


def synthetic(n=160, family="UCB", param=0.8, tau=(0.2, 0.5), gamma=0.2, w=0.65, seed=3, tables=None):
    rng = np.random.default_rng(seed)
    tables = tables or load_tables()
    d = rng.uniform(-34, 34, n)
    ts = tables.theta_star(family, param, d, tau=tau[1], tau_neg=tau[0])
    x = wc_mixture_random(ts, gamma, w, rng=rng)
    return SubjectObservations(
        subject=1,
        user_id=1,
        session_id=np.arange(1000, 1000 + n),
        round_index=np.arange(1, n + 1),
        delta_r1=d,
        theta2=x,
    )


# --- wrapped Cauchy mixture ---------------------------------------------------------------
@pytest.mark.parametrize("ts", [0.0, 0.3, np.pi / 2, np.pi - 1e-9, np.pi])
@pytest.mark.parametrize("g,w", [(0.01, 0.5), (0.3, 0.0), (0.785, 1.0), (0.1, 0.83)])
def test_mixture_logp_matches_scipy(ts, g, w):
    import pytensor

    x = np.linspace(-np.pi, np.pi, 41)
    ref = scipy_mixture_logpdf(x, ts, g, w)
    np.testing.assert_allclose(wc_mixture_logp_numpy(x, ts, g, w), ref, rtol=1e-9, atol=1e-9)
    got = pytensor.function([], wc_mixture_logp(x, ts, g, w))()
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_mixture_integrates_to_one_and_samples_match():
    for g in (0.01, 0.2, 0.785):
        val, _ = integrate.quad(
            lambda v, g=g: np.exp(wc_mixture_logp_numpy(v, 1.0, g, 0.3)), -np.pi, np.pi, limit=400, points=[1.0, -1.0]
        )
        assert val == pytest.approx(1.0, abs=1e-6)
    draws = wc_mixture_random(np.full(200_000, 1.2), 0.3, 0.7, rng=np.random.default_rng(1))
    assert np.all((draws > -np.pi) & (draws <= np.pi))
    # the share of positive draws matches the density's mass on (0, pi]
    pos, _ = integrate.quad(lambda v: np.exp(wc_mixture_logp_numpy(v, 1.2, 0.3, 0.7)), 0, np.pi, points=[1.2])
    assert np.mean(draws > 0) == pytest.approx(pos, abs=0.005)
    # a histogram agrees with the density
    hist, edges = np.histogram(draws, bins=60, range=(-np.pi, np.pi), density=True)
    mid = 0.5 * (edges[1:] + edges[:-1])
    np.testing.assert_allclose(hist, np.exp(wc_mixture_logp_numpy(mid, 1.2, 0.3, 0.7)), rtol=0.15, atol=0.01)


def test_custom_dist_logp_and_draws():
    import pymc as pm

    with pm.Model() as m:
        WrappedCauchyMixture("theta2", 0.9, 0.25, 0.6, observed=np.array([0.1, 1.0, -2.0]))
    lp = m.compile_logp(sum=False)({})[0]
    np.testing.assert_allclose(lp, scipy_mixture_logpdf(np.array([0.1, 1.0, -2.0]), 0.9, 0.25, 0.6), rtol=1e-6)
    d = pm.draw(m["theta2"], random_seed=1)
    assert d.shape == (3,) and np.all(np.abs(d) <= np.pi)


def test_mixture_gradient_finite():
    import pytensor
    import pytensor.tensor as pt

    ts, g, w = pt.dscalars("ts", "g", "w")
    x = np.linspace(-np.pi, np.pi, 25)
    lp = wc_mixture_logp(x, ts, g, w).sum()
    f = pytensor.function([ts, g, w], pt.grad(lp, [ts, g, w]))
    for args in [(0.0, 0.01, 0.0), (np.pi, 0.01, 1.0), (1.0, 0.785, 0.5)]:
        assert np.all(np.isfinite(f(*args)))
    pytensor.gradient.verify_grad(
        lambda a, b, c: wc_mixture_logp(x, a, b, c).sum(), [1.1, 0.3, 0.4], rng=np.random.default_rng(0)
    )


# --- lookup -------------------------------------------------------------------------------
def test_lookup_matches_tables(tables):
    d = RNG.uniform(-34, 34, 50)
    rt = RoundTables.from_tables(tables, d)
    for f in ("PI", "EI", "UCB"):
        lo, hi = {"PI": (0, 30), "EI": (0, 30), "UCB": (0.5, 0.99)}[f]
        for p, t in zip(RNG.uniform(lo, hi, 5), RNG.uniform(0, np.pi / 2, 5)):
            ref = tables.theta_star(f, p, d, tau=t)
            np.testing.assert_allclose(lookup_numpy(rt, f, p, t), ref, atol=1e-12)
        # at table nodes the lookup is the table itself
        np.testing.assert_allclose(lookup_numpy(rt, f, lo, 0.0), rt.values[rt.index(f), 0, 0], atol=1e-12)


def test_round_tables_of_the_unaugmented_model_and_the_round_order(tables):
    """The unaugmented model's tables are the full tables' tau = 0 node (interpolated at that node alone, the
    same values to the bit), a family subset keeps its own order, and ``to_subject_order`` undoes the ũ±
    model's internal order (rounds with delta_r1 < 0 first) on any leading shape."""
    obs = synthetic(120, tables=tables)
    full = RoundTables.from_tables(tables, obs.delta_r1)
    u = SubjectData.prepare(obs, "u", tables)
    assert u.rt.n_tau == 1 and u.rt.values.shape == full.values[:, :, :1].shape
    assert u.rt.values.tobytes() == np.ascontiguousarray(full.values[:, :, :1]).tobytes()
    assert u.rt.tau_step == full.tau_step
    sub = RoundTables.from_tables(tables, obs.delta_r1, ("UCB", "PI"))
    assert sub.values.tobytes() == np.ascontiguousarray(full.values[[full.index("UCB"), full.index("PI")]]).tobytes()
    pm = SubjectData.prepare(obs, "tau_pm", tables)
    assert 0 < pm.n_neg < obs.n_rounds and not np.array_equal(pm.order, np.arange(obs.n_rounds))
    np.testing.assert_array_equal(pm.to_subject_order(pm.theta2), obs.theta2)
    x = RNG.normal(size=(2, 3, obs.n_rounds))
    back = pm.to_subject_order(x)
    np.testing.assert_array_equal(back[..., pm.order], x)
    # an array whose last axis is not the rounds is refused (a gather would quietly drop the extra positions)
    for bad in (np.zeros(obs.n_rounds + 1), np.zeros((obs.n_rounds, 2)), np.float64(1.0)):
        with pytest.raises(ValueError, match=f"{obs.n_rounds} rounds"):
            pm.to_subject_order(bad)


def test_lookup_pytensor_and_gradient(tables):
    import pytensor
    import pytensor.tensor as pt

    d = RNG.uniform(-34, 34, 30)
    rt = RoundTables.from_tables(tables, d)
    k = rt.index("UCB")
    p, t = pt.dscalars("p", "t")
    out = lookup_pytensor(
        pt.constant(rt.values[k]), p, t, param_lo=rt.param_lo[k], param_step=rt.param_step[k], tau_step=rt.tau_step
    )
    f = pytensor.function([p, t], [out, pt.grad(out.sum(), [p, t])[0]])
    val, grad = f(0.77, 0.4)
    np.testing.assert_allclose(val, lookup_numpy(rt, "UCB", 0.77, 0.4), atol=1e-12)
    eps = 1e-7
    fd = (lookup_numpy(rt, "UCB", 0.77 + eps, 0.4).sum() - lookup_numpy(rt, "UCB", 0.77 - eps, 0.4).sum()) / (2 * eps)
    assert grad == pytest.approx(fd, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("model", ["u", "tau", "tau_pm"])
def test_compiled_pointwise_loglik_matches_numpy(model, tables):
    """The compiled per-draw loop (assembly, bridge sampling, LOO) against the NumPy lookup and density, round by
    round and summed (one log per block of rounds), at draws inside and outside the tables' grids (clamped), at
    gamma near the prior's smallest value (densities up to 1e4) and at w = 0 and 1."""
    from ibo_pymc.tasks.hotspot.model import pointwise

    sd = SubjectData.prepare(synthetic(150, tables=tables), model, tables)
    rng = np.random.default_rng(7)
    S = 300
    for fam in sd.families:
        k = sd.rt.index(fam)
        lo, step = sd.rt.param_lo[k], sd.rt.param_step[k]
        hi = lo + step * (sd.rt.n_param - 1)
        p = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), S)
        tn, tp = rng.uniform(-0.1, 1.1, (2, S))
        g = np.exp(rng.uniform(np.log(0.01), np.log(np.pi / 4), S))
        w = np.r_[0.0, 1.0, rng.uniform(0, 1, S - 2)]
        got = pointwise.loglik(
            sd, fam, p.reshape(3, -1), tn.reshape(3, -1), tp.reshape(3, -1), g.reshape(3, -1), w.reshape(3, -1)
        )
        ref = pointwise.loglik_numpy(sd, fam, p, tn, tp, g, w)
        assert got.shape == (3, S // 3, sd.obs.n_rounds)
        np.testing.assert_allclose(got.reshape(S, -1), ref, rtol=1e-12, atol=1e-12)
        summed = pointwise.loglik(sd, fam, p, tn, tp, g, w, summed=True)
        assert summed.shape == (S,)
        np.testing.assert_allclose(summed, ref.sum(-1), rtol=1e-12)


# --- fused Op and compiled density ------------------------------------------------------------
@pytest.mark.parametrize("model", ["u", "tau", "tau_pm"])
def test_op_matches_numpy_and_gradient(model, tables):
    import pytensor
    import pytensor.tensor as pt

    from ibo_pymc.tasks.hotspot.model import pointwise
    from ibo_pymc.tasks.hotspot.model.op import family_loglik

    sd = SubjectData.prepare(synthetic(90, tables=tables), model, tables)
    T, xh, n_neg, grid, tau_step = sd.op_inputs()
    vals = [
        np.array([4.2, 13.0, 0.7]),
        np.array([0.3, 0.8, 0.1]),
        np.array([0.5, 0.2, 1.1]),
        np.array([0.2, 0.5, 0.1]),
        np.array([0.6, 0.3, 0.9]),
    ]
    ins = [pt.dvector(n) for n in "abcde"]
    ll, _ = family_loglik(T, xh, n_neg, grid, tau_step, *ins)
    f = pytensor.function(ins, ll)
    got = f(*vals)
    for k, fam in enumerate(sd.families):
        tn, tp = (
            (0.0, 0.0) if model == "u" else ((vals[2][k], vals[2][k]) if model == "tau" else (vals[1][k], vals[2][k]))
        )
        ref = pointwise.loglik(sd, fam, vals[0][k], tn, tp, vals[3][k], vals[4][k]).sum()
        if model == "tau":
            ref = pointwise.loglik(sd, fam, vals[0][k], vals[1][k], vals[2][k], vals[3][k], vals[4][k]).sum()
        assert got[k] == pytest.approx(ref, rel=1e-10)
    pytensor.gradient.verify_grad(
        lambda a, b, c, d, e: family_loglik(T, xh, n_neg, grid, tau_step, a, b, c, d, e)[0].sum(),
        [v + 0.013 for v in vals],
        rng=np.random.default_rng(1),
        eps=1e-7,
        abs_tol=1e-4,
        rel_tol=1e-4,
    )


@pytest.mark.parametrize("model", ["u", "tau_pm"])
@pytest.mark.parametrize("layout", ["marginal", "stacked"])
def test_compiled_density_equals_pymc_model(model, layout, tables):
    from ibo_pymc.tasks.hotspot.model import compiled

    sd = SubjectData.prepare(synthetic(70, tables=tables), model, tables)
    m = build_model(sd, layout=layout)
    logp = m.compile_logp()
    dlogp = m.compile_dlogp()
    _, blocks = compiled.pack(sd, layout)
    names = [b.name for b in blocks]
    values = {v.name: v for v in m.value_vars}
    for _ in range(3):
        x = RNG.normal(size=sum(b.size for b in blocks))
        point, j = {}, 0
        for b in blocks:
            key = f"{b.name}_interval__"
            point[key] = (
                x[j] if b.size == 1 and key in values and m.initial_point()[key].ndim == 0 else x[j : j + b.size]
            )
            j += b.size
        lp, g = compiled.density(sd, layout, x)
        assert lp == pytest.approx(float(logp(point)), rel=1e-9)
        # PyMC orders the gradient by value_vars; map ours into that order
        ref = dlogp(point)
        ours, j = {}, 0
        for b in blocks:
            ours[f"{b.name}_interval__"] = g[j : j + b.size]
            j += b.size
        flat = np.concatenate([np.atleast_1d(ours[v.name]) for v in m.value_vars])
        np.testing.assert_allclose(flat, ref, rtol=1e-6, atol=1e-6)
    assert names[0] == "xi_pi"


# --- fitting --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_fit(tables):
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    obs = synthetic(160, tables=tables)
    m = IBOModel(obs, "tau_pm", draws=300, tune=300, chains=2, seed=11)
    m.fit(progress=False)
    return m


def test_fit_recovers_truth_and_has_groups(small_fit):
    idata = small_fit.idata
    for g in ("posterior", "log_likelihood", "observed_data", "constant_data", "sample_stats"):
        assert g in idata.groups()
    assert "posterior_predictive" not in idata.groups()  # drawn on demand (test_saved_fit_reloads_and_rebuilds)
    # the engine's sampler statistics, as every task keeps them (not nutpie's 13)
    assert set(idata.sample_stats.data_vars) == {"diverging", "step_size", "n_steps", "depth", "logp", "energy"}
    post = idata.posterior
    for v in ("xi_pi", "xi_ei", "p_ucb", "gamma", "w", "tau_neg", "tau_pos", "family_draw", "family_prob"):
        assert v in post
    assert post["family_prob"].dims == ("chain", "draw", "family")
    assert list(post["family"].values) == ["PI", "EI", "UCB"]
    assert idata.log_likelihood["theta2"].shape == (2, 300, 160)
    probs = small_fit.family_probabilities()
    assert probs["UCB"] > 0.9
    summ = small_fit.summary()
    ucb = summ[summ["family"] == "UCB"].set_index("parameter")
    truth = {"p_ucb": 0.8, "gamma": 0.2, "w": 0.65, "tau_neg": 0.2, "tau_pos": 0.5}
    for name, v in truth.items():
        assert ucb.loc[name, "hdi_0.95_low"] - 0.02 <= v <= ucb.loc[name, "hdi_0.95_high"] + 0.02, name
    # the pointwise log-likelihood sums to the family's total at each draw
    assert np.all(np.isfinite(idata.log_likelihood["theta2"].values))


def test_a_model_of_the_base_class(small_fit, tmp_path):
    """The hotspot model is an IBOModelBase: its loo() is the engine's reliable LOO (the same numbers as the
    task's reliable_loo), its plot() the paper's figure of a subject, its file name the task's."""
    from ibo_pymc.engine.model import IBOModelBase
    from ibo_pymc.tasks.hotspot.compare import reliable_loo

    assert isinstance(small_fit, IBOModelBase) and small_fit.task == "hotspot"
    loo = small_fit.loo()
    ref, n_refit = reliable_loo(small_fit)
    assert np.array_equal(loo.loo_i.values, ref.loo_i.values) and loo["n_refit"] == n_refit
    assert (loo.pareto_k.values <= 0.7).all() and loo.n_data_points == small_fit.obs.n_rounds
    small_fit.plot().savefig(tmp_path / "fit.png")
    assert (tmp_path / "fit.png").stat().st_size > 1000
    assert small_fit.file_name() == f"subject-{small_fit.obs.subject:02d}-{small_fit.config.model}.nc"


def test_saved_fit_reloads_and_rebuilds(small_fit, tmp_path):
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    path = small_fit.save(tmp_path / "fit.nc")
    assert not [p for p in tmp_path.iterdir() if p.name != "fit.nc"]
    m2 = IBOModel.load(path)
    assert m2.config == small_fit.config
    np.testing.assert_array_equal(m2.obs.theta2, small_fit.obs.theta2)
    np.testing.assert_array_equal(m2.idata.posterior["gamma"].values, small_fit.idata.posterior["gamma"].values)
    assert m2.idata.posterior.attrs["model"] == "tau_pm"
    assert json.loads(m2.idata.posterior.attrs["config"])["sampler"]["draws"] == 300
    model = m2.build()
    assert {"xi_pi", "gamma", "tau_neg"} <= {v.name for v in model.free_RVs}
    pd_ = m2.family_probabilities()
    np.testing.assert_array_equal(
        m2.idata.posterior["family_prob"].values, small_fit.idata.posterior["family_prob"].values
    )
    np.testing.assert_allclose(pd_.to_numpy(), small_fit.family_probabilities().to_numpy(), rtol=1e-12)


def test_saved_fit_is_compact_and_full_keeps_everything(small_fit, tmp_path):
    """A default save packs the log-likelihood in 16 bits (decoded on reading, within half a step of the
    in-memory values; az.loo moves by far less than its standard error) and leaves out the posterior
    predictive, which the loaded model draws again exactly; full=True keeps both as they are."""
    import arviz as az
    import h5py

    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    compact, full = small_fit.save(tmp_path / "compact.nc"), small_fit.save(tmp_path / "full.nc", full=True)
    with h5py.File(compact) as f:
        assert "posterior_predictive" not in f and f["log_likelihood/theta2"].dtype == np.int16
    with h5py.File(full) as f:
        assert f["posterior_predictive/theta2"].dtype == np.float64
        assert f["log_likelihood/theta2"].dtype == np.float64
    assert compact.stat().st_size < 0.5 * full.stat().st_size
    ll = small_fit.idata.log_likelihood["theta2"].values
    m = IBOModel.load(compact)
    step = (ll.max() - ll.min()) / 65532
    assert np.abs(m.idata.log_likelihood["theta2"].values - ll).max() <= 0.5 * step * (1 + 1e-6)
    a, b = az.loo(small_fit.idata), az.loo(m.idata)
    assert abs(a.elpd_loo - b.elpd_loo) < 0.01 * a.se
    # the posterior predictive: drawn on demand from the fit's own stream, the same from the loaded fit
    drawn = m.posterior_predictive()["theta2"].values
    assert drawn.shape == ll.shape and np.isfinite(drawn).all()
    kept = IBOModel.load(full)
    np.testing.assert_array_equal(kept.idata.posterior_predictive["theta2"].values, drawn)
    np.testing.assert_array_equal(kept.idata.log_likelihood["theta2"].values, ll)
    # another seed is drawn (and replaces the group), never ignored; the fit's own stream comes back after it
    other = m.posterior_predictive(seed=1)["theta2"].values
    assert not np.array_equal(other, drawn) and m.idata.posterior_predictive.attrs["seed"] == 1
    np.testing.assert_array_equal(m.posterior_predictive()["theta2"].values, drawn)


def test_load_rejects_bad_files(tmp_path):
    from ibo_pymc.errors import InputError
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    bad = tmp_path / "bad.nc"
    bad.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    with pytest.raises(InputError, match="bad.nc"):
        IBOModel.load(bad)
    with pytest.raises(InputError, match="no such file"):
        IBOModel.load(tmp_path / "missing.nc")


def test_same_seed_same_draws(tables):
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    obs = synthetic(60, tables=tables, seed=5)
    ma, mb = (IBOModel(obs, "u", draws=100, tune=100, chains=2, seed=4) for _ in range(2))
    a, b = ma.fit(progress=False), mb.fit(progress=False)
    c = IBOModel(obs, "u", draws=100, tune=100, chains=2, seed=5).fit(progress=False)
    np.testing.assert_array_equal(a.posterior["gamma"].values, b.posterior["gamma"].values)
    np.testing.assert_array_equal(
        ma.posterior_predictive()["theta2"].values, mb.posterior_predictive()["theta2"].values
    )
    assert not np.array_equal(a.posterior["gamma"].values, c.posterior["gamma"].values)
    # another seed: the log evidence agrees within its reported standard errors
    from ibo_pymc.engine.results import log_evidence

    la, lc = log_evidence(a), log_evidence(c)
    z = (la["log_evidence"] - lc["log_evidence"]).abs() / np.hypot(la["error"], lc["error"])
    assert (z < 4).all(), pd.concat([la, lc], axis=1).to_string()
    assert a.posterior.attrs["log_evidence"] == la.loc["all", "log_evidence"]
    assert a.posterior.attrs["log_evidence_error"] == la.loc["all", "error"]


# --- CLI ---------------------------------------------------------------------------------
def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "ibo_pymc.cli.sample", *args], capture_output=True, text=True, env=env)


def test_cli_sample_subject(raw_folder, tmp_path):
    out = tmp_path / "s28.nc"
    r = _cli("--subject", "28", "--data", str(raw_folder), "--draws", "200", "--tune", "200", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "posterior family probabilities" in r.stdout and "divergences" in r.stdout
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    m = IBOModel.load(out)
    assert m.obs.subject == 28 and m.obs.n_rounds == 294


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--subject", "29"], "subject 29 is not in the data"),
        (["--subject", "0"], "subject"),
        (["--subject", "3", "--model", "v"], "--model"),
        (["--subject", "3", "--draws", "0"], "--draws"),
        (["--subject", "3", "--chains", "-2"], "--chains"),
        (["--subject", "3", "--out", "fit.csv"], ".nc"),
    ],
)
def test_cli_bad_arguments(raw_folder, args, needle):
    r = _cli(*args, "--data", str(raw_folder))
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_saved_fit_reads_back_as_xarray_writes_it(small_fit, tmp_path):
    """The fit writer (h5netcdf's API, xarray's encoding) against xarray's own writer on a hotspot fit."""
    from tests.fit_files import assert_writes_as_xarray

    small_fit.posterior_predictive()  # a full file holds it too
    assert_writes_as_xarray(small_fit.idata, tmp_path)
