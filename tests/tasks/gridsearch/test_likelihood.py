"""Surrogates, acquisition families and the softmax choice rule: values against direct computations,
gradients against finite differences, the PyTensor Op and the nutpie callback against each other."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from ibo_pymc.tasks.gridsearch import density
from ibo_pymc.tasks.gridsearch.choice import FAMILIES, choice_loglik
from ibo_pymc.tasks.gridsearch.likelihood import loglik
from ibo_pymc.tasks.gridsearch.op import GridLogLik
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet
from ibo_pymc.tasks.gridsearch.surrogate import (
    BMT_PRIOR_VAR,
    NOISE,
    bmt_posterior,
    gp_posterior,
    gp_posterior_reference,
)
from tests.tasks.gridsearch.callback import call_logp


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    ch = rng.integers(0, 64, (4, 12))
    ch[0, 5] = ch[0, 2]  # a repeated click
    ch[1, 1] = ch[1, 0]
    return ch, rng.uniform(-0.5, 0.5, (4, 12))


@pytest.mark.parametrize("lam", [0.05, 0.7, 2.0, 40.0])
def test_gp_equals_direct_solves(data, lam):
    ch, y = data
    mu, var, _, _ = gp_posterior(ch, y, lam)
    m2, v2 = gp_posterior_reference(ch, y, lam)
    assert np.allclose(mu, m2, atol=1e-9) and np.allclose(var, v2, atol=1e-9)
    # one observation: textbook formulas
    k = np.exp(-GRID_8X8.sqdist[ch[2, 0]] / (2 * lam**2))
    assert np.allclose(mu[2, 0], k * y[2, 0] / (1 + NOISE))
    assert np.allclose(var[2, 0], 1 + NOISE - k**2 / (1 + NOISE))


def test_published_gp_detail(data):
    """The published code's kernel adds the noise to k(x, x*) when x* is the one observed point."""
    ch, y = data
    mu, var, _, _ = gp_posterior(ch, y, 0.8, published=True)
    mu0, var0, _, _ = gp_posterior(ch, y, 0.8)
    r = np.arange(len(ch))
    assert np.allclose(mu[r, 0, ch[:, 0]], y[:, 0]) and np.all(var[r, 0, ch[:, 0]] == 0)
    # the 2018 code's variance there is |(1 + n) - (1 + n) (1 / sqrt(1 + n))^2 (1 + n)| in floating point: 2^-52
    k = 1.0 + NOISE
    assert abs(k - (k * ((1 / np.sqrt(k)) * (1 / np.sqrt(k)))) * k) == np.finfo(float).eps
    keep = np.ones_like(mu, bool)
    keep[r, 0, ch[:, 0]] = False
    assert np.array_equal(mu[keep], mu0[keep])
    for rule in ("wu2018", "wu2018-line"):
        v18 = gp_posterior(ch, y, 0.8, published=rule)[1]
        assert np.all(v18[r, 0, ch[:, 0]] == np.finfo(float).eps) and np.array_equal(v18[keep], var[keep])


def test_bmt_equals_kalman_updates(data):
    ch, y = data
    err = 0.7
    mu, var, _, _ = bmt_posterior(ch, y, err)
    for r in range(len(ch)):
        m, v = np.zeros(64), np.full(64, BMT_PRIOR_VAR)
        for t in range(ch.shape[1] - 1):
            j = ch[r, t]
            g = v[j] / (v[j] + err)
            m[j] += g * (y[r, t] - m[j])
            v[j] *= 1 - g
            assert np.allclose(mu[r, t], m) and np.allclose(var[r, t], v)


@pytest.mark.parametrize("surrogate", ["GP", "BMT"])
def test_surrogate_derivatives(data, surrogate):
    ch, y = data
    f = (
        (lambda th, g=False: gp_posterior(ch, y, th, grad=g))
        if surrogate == "GP"
        else (lambda th, g=False: bmt_posterior(ch, y, th, grad=g))
    )
    th, h = 0.9, 1e-6
    _, _, dmu, dvar = f(th, True)
    up, dn = f(th + h), f(th - h)
    assert np.allclose((up[0] - dn[0]) / (2 * h), dmu, atol=1e-5)
    assert np.allclose((up[1] - dn[1]) / (2 * h), dvar, atol=1e-5)


def _reference_loglik(ch, y, mu, var, family, beta, tau):
    s = np.sqrt(var)
    best = np.maximum.accumulate(y, axis=1)[:, :-1, None]
    z = (mu - best) / s
    q = {
        "UCB": mu + beta * s,
        "EI": (mu - best) * stats.norm.cdf(z) + s * stats.norm.pdf(z),
        "PI": stats.norm.cdf(z),
        "mean": mu,
        "variance": s,
    }[family]
    logp = special.log_softmax(q / tau, axis=-1)
    return np.take_along_axis(logp, ch[:, 1:, None], axis=-1)[..., 0].sum(axis=1)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("surrogate", ["GP", "BMT"])
def test_choice_loglik_value_and_gradient(data, family, surrogate):
    ch, y = data
    theta, beta, tau = 0.9, 0.3, 0.07
    ll, g = loglik(ch, y, surrogate, family, theta, beta, tau, grad=True)
    th_eff = theta if surrogate == "GP" else theta**2  # the mean tracker's noise variance is error_variance^2
    mu, var, _, _ = gp_posterior(ch, y, theta) if surrogate == "GP" else bmt_posterior(ch, y, th_eff)
    assert np.allclose(ll, _reference_loglik(ch, y, mu, var, family, beta, tau), atol=1e-9)
    x, h = np.array([theta, beta, tau]), 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        num = (loglik(ch, y, surrogate, family, *(x + e)).sum() - loglik(ch, y, surrogate, family, *(x - e)).sum()) / (
            2 * h
        )
        assert np.isclose(g.sum(0)[j], num, rtol=1e-5, atol=1e-5), (j, g.sum(0)[j], num)


def test_published_choice_rule_clamps(data):
    """q of UCB below 0.0001 is set to 0.0001; the chosen probability is clamped to [1e-5, 0.99999]."""
    ch, y = data
    mu, var, dmu, dvar = gp_posterior(ch, y, 0.6, grad=True)
    ll, g = choice_loglik((mu, var, dmu, dvar), ch, y, "UCB", 0.2, 0.01, published=True)
    q = np.clip(mu + 0.2 * np.sqrt(var), 1e-4, 100)
    p = special.softmax(q / 0.01, axis=-1)
    pc = np.clip(np.take_along_axis(p, ch[:, 1:, None], -1)[..., 0], 1e-5, 0.99999)
    assert np.allclose(ll, np.log(pc).sum(1))

    # its gradient (what the published protocol's optimiser follows) against central differences
    def total(th, b, t):
        return choice_loglik(gp_posterior(ch, y, th, grad=True), ch, y, "UCB", b, t, published=True)[0].sum()

    for j, x0 in enumerate((0.6, 0.2, 0.01)):
        args = [0.6, 0.2, 0.01]
        h = 1e-6 * x0
        up, dn = list(args), list(args)
        up[j] += h
        dn[j] -= h
        assert g.sum(0)[j] == pytest.approx((total(*up) - total(*dn)) / (2 * h), rel=1e-5, abs=1e-6), j


def test_op_and_callback_agree_with_the_pymc_model(data):
    import pytensor
    import pytensor.tensor as pt

    from ibo_pymc.tasks.gridsearch.data import GridRounds
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, build_model

    ch, y = data
    gr = GridRounds(1, "spatial", np.arange(1, 5), ch, 100 * y + 50)
    cfg = GridSearchConfig()
    m = build_model(gr, "UCB", cfg)
    logp = m.compile_logp()
    dlogp = m.compile_dlogp()
    buf = density.pack(gr.choices, gr.y, "GP", "UCB", cfg.prior_array("UCB"))
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal([0, -1.5, -2.5], 0.5)
        pt_ = {"lambda_log__": x[0], "beta_log__": x[1], "tau_log__": x[2]}
        v, g = density.log_density_grad(buf, x)
        assert np.isclose(logp(pt_), v, rtol=1e-10)
        assert np.allclose(dlogp(pt_), g, rtol=1e-7)
        assert np.isclose(density.log_density(buf, x[None])[0], v)
    # the Op's gradient through pytensor.grad equals finite differences
    th = pt.dscalar("th")
    op = GridLogLik("GP", "EI")
    ll, _ = op(pt.as_tensor(ch), pt.as_tensor(y), th, pt.as_tensor(0.0), pt.as_tensor(0.05))
    f = pytensor.function([th], [ll.sum(), pytensor.grad(ll.sum(), th)])
    v, g = f(0.8)
    assert np.isclose(g, (f(0.8 + 1e-6)[0] - f(0.8 - 1e-6)[0]) / 2e-6, rtol=1e-5)


@pytest.mark.parametrize("surrogate, family", [("GP", "UCB"), ("BMT", "EI"), ("GP", "PI")])
def test_nutpie_callback_equals_the_density(data, surrogate, family):
    """The C callback nutpie calls gives the log-density and gradient of ``log_density_grad``; a wrong
    dimension is refused (-1)."""

    ch, y = data
    prior = np.array([[0.0, 1.0], *([[-1.6, 1.5]] if family == "UCB" else []), [-3.0, 1.5]])
    buf = density.pack(ch, y, surrogate, family, prior)
    for x in (np.array([0.1, -1.0, -2.0]), np.array([-0.5, 0.3, -3.5])):
        x = np.ascontiguousarray(x[: len(prior)])
        rc, logp, out = call_logp(buf, x)
        v, g = density.log_density_grad(buf, x)
        assert rc == 0 and logp == pytest.approx(v, rel=1e-12) and np.allclose(out, g, rtol=1e-12)
    assert call_logp(buf, x, dim=len(x) + 1)[0] == -1


def test_op_in_the_numba_backend(data):
    """The Op compiled by PyTensor's Numba backend gives what its Python ``perform`` gives."""
    import pytensor
    import pytensor.tensor as pt

    ch, y = data
    th, b, t = pt.dscalars("th", "b", "t")
    ll, jac = GridLogLik("GP", "UCB")(pt.as_tensor(ch), pt.as_tensor(y), th, b, t)
    py = pytensor.function([th, b, t], [ll, jac], mode="FAST_COMPILE")
    nb = pytensor.function([th, b, t], [ll, jac], mode="NUMBA")
    for a, c in zip(py(0.8, 0.3, 0.05), nb(0.8, 0.3, 0.05)):
        assert np.allclose(a, c, rtol=1e-12)


def test_one_participant_is_fast_enough_to_sample(choices):
    """Not a timing test: the kernel's cost is checked by benchmarks/gridsearch_speed.py. Here: the
    likelihood of a real participant (171 choices) is finite with a finite gradient everywhere in the box."""
    from ibo_pymc.tasks.gridsearch.data import grid_rounds

    gr = grid_rounds(choices, 1, "spatial")
    for th in (0.007, 1.0, 148.0):
        for tau in (0.007, 148.0):
            ll, g = loglik(gr.choices, gr.y, "GP", "UCB", th, 0.5, tau, grad=True)
            assert np.isfinite(ll).all() and np.isfinite(g).all()


# --- any finite option set (issue 32: a line of 30, an 11 x 11 grid, a user's own points) ---------------------
def test_option_sets_index_and_distances():
    line, grid = OptionSet.grid(30, 1), OptionSet.grid(11, 11)
    assert line.size == 30 and grid.size == 121 and GRID_8X8.size == 64
    # the studies' own numbering: the arm on the line, 11 x + y and 8 x + y on the grids
    assert line.index(7, 0) == 7 and grid.index(3, 5) == 38 and GRID_8X8.index(3, 5) == 29
    np.testing.assert_array_equal(grid.index([0, 10], [10, 0]), [10, 110])
    assert grid.sqdist[grid.index(0, 0), grid.index(3, 4)] == 25 and grid.manhattan[0, grid.index(3, 4)] == 7
    np.testing.assert_array_equal(line.manhattan[4], np.abs(np.arange(30) - 4))
    own = OptionSet(np.array([[0, 0], [5, 1], [2, 9]]))
    assert own.sqdist[1, 2] == 9 + 64 and own == OptionSet(np.array([[0, 0], [5, 1], [2, 9]])) and own != line
    for bad in (np.array([[0, 0], [0, 0]]), np.array([[0.5, 0], [1, 0]]), np.zeros((3, 3))):
        with pytest.raises(ValueError):
            OptionSet(bad)
    with pytest.raises(ValueError, match="not one of the 30 options"):
        line.index(30, 0)


@pytest.mark.parametrize(
    "options",
    [OptionSet.grid(30, 1), OptionSet.grid(11, 11), OptionSet(np.array([[0, 0], [5, 1], [2, 9], [7, 7], [3, 3]]))],
)
def test_surrogates_on_other_option_sets(options):
    """The compiled GP posterior (and its lambda-derivative) against direct solves, and the mean tracker's
    shape, on a line, an 11 x 11 grid and scattered points; the choice likelihood runs on them."""
    rng = np.random.default_rng(11)
    P = options.size
    ch = rng.integers(0, P, (3, 9))
    ch[1, 4] = ch[1, 1]
    y = rng.uniform(-0.5, 0.5, ch.shape)
    mu, var, dmu, dvar = gp_posterior(ch, y, 1.3, grad=True, options=options)
    m2, v2 = gp_posterior_reference(ch, y, 1.3, options=options)
    assert mu.shape == (3, 8, P)
    np.testing.assert_allclose(mu, m2, atol=1e-9)
    np.testing.assert_allclose(var, np.maximum(v2, 1e-12), atol=1e-9)
    eps = 1e-6
    mp, vp = gp_posterior_reference(ch, y, 1.3 + eps, options=options)
    mm, vm = gp_posterior_reference(ch, y, 1.3 - eps, options=options)
    np.testing.assert_allclose(dmu, (mp - mm) / (2 * eps), atol=1e-5)
    np.testing.assert_allclose(dvar, (vp - vm) / (2 * eps), atol=1e-5)
    bm, bv, _, _ = bmt_posterior(ch, y, 0.3, options=options)
    assert bm.shape == bv.shape == (3, 8, P) and (bv[:, 0] < BMT_PRIOR_VAR).sum() == 3
    ll = loglik(ch, y, "GP", "UCB", 1.3, 0.5, 0.05, options=options)
    assert ll.shape == (3,) and np.isfinite(ll).all() and (ll < 0).all()


@pytest.mark.parametrize("options", [OptionSet.grid(30, 1), OptionSet.grid(11, 11)])
def test_compiled_density_on_other_options_and_unequal_rounds(options):
    """The Bayesian density's buffer carries the option set and each round's observations: its per-round
    log-likelihood equals the likelihood of each round cut to its length, the nutpie callback reads the
    larger buffer, and the PyTensor Op (with ``lengths``) agrees."""

    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(5)
    P = options.size
    ch = rng.integers(0, P, (3, 11))
    y = rng.uniform(-0.5, 0.5, ch.shape)
    lengths = np.array([11, 6, 8])
    th, b, t = 1.4, 0.4, 0.06
    want = np.array(
        [
            loglik(ch[r : r + 1, :n], y[r : r + 1, :n], "GP", "UCB", th, b, t, options=options)[0]
            for r, n in enumerate(lengths)
        ]
    )
    got = density.round_loglik_many(ch, y, "GP", "UCB", [th], [b], [t], lengths=lengths, options=options)[0]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    prior = np.array([[0.0, 1.0], [-1.6, 1.5], [-3.0, 1.5]])
    buf = density.pack(ch, y, "GP", "UCB", prior, lengths=lengths, options=options)
    x = np.log([th, b, t])
    v, g = density.log_density_grad(buf, x)
    z = (x - prior[:, 0]) / prior[:, 1]
    assert v == pytest.approx(
        want.sum() + (-0.5 * z**2 - np.log(prior[:, 1]) - 0.5 * np.log(2 * np.pi)).sum(), rel=1e-10
    )
    rc, logp, out = call_logp(buf, x)
    assert rc == 0 and logp == pytest.approx(v, rel=1e-12) and np.allclose(out, g, rtol=1e-12)
    thv = pt.dscalar("th")
    ll, _ = GridLogLik("GP", "UCB", options)(pt.as_tensor(ch), pt.as_tensor(y), thv, b, t, pt.as_tensor(lengths))
    f = pytensor.function([thv], ll, mode="FAST_COMPILE")
    np.testing.assert_allclose(f(th), want, rtol=1e-10)
    with pytest.raises(ValueError, match="lengths must be 3 numbers"):
        density.pack(ch, y, "GP", "UCB", prior, lengths=[11, 12, 3], options=options)


def test_rounds_of_unequal_length_through_the_model():
    """A participant whose rounds differ in length (Wu et al. 2018's horizons) on the 30-option line: the model's
    density and per-round log-likelihood at draws equal each round's likelihood cut to its length, the
    predictive keeps the padding, and the observations round-trip through a fit's groups."""
    import arviz as az
    import xarray as xr

    from ibo_pymc.tasks.gridsearch.data import PAD, GridRounds
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, GridSearchModel

    line = OptionSet.grid(30, 1)
    rng = np.random.default_rng(8)
    lengths = np.array([6, 11, 6, 11])
    ch = rng.integers(0, 30, (4, 11))
    z = rng.integers(0, 100, (4, 11)).astype(float)
    pad = np.arange(11)[None, :] >= lengths[:, None]
    ch[pad], z[pad] = PAD, np.nan
    gr = GridRounds(3, "1d", np.arange(1, 5), ch, z, options=line, lengths=lengths)
    assert gr.n_choices == (lengths - 1).sum() and gr.select([2, 4]).round_lengths.tolist() == [11, 11]
    with pytest.raises(ValueError, match="must hold choice -1"):
        GridRounds(3, "1d", np.arange(1, 5), np.where(pad, 0, ch), z, options=line, lengths=lengths)
    cfg = GridSearchConfig(families=("UCB", "PI"))
    m = GridSearchModel(gr, cfg)
    th, b, t = 1.7, 0.3, 0.05
    want = np.array(
        [
            loglik(ch[r : r + 1, :n], gr.y[r : r + 1, :n], "GP", "UCB", th, b, t, options=line)[0]
            for r, n in enumerate(lengths)
        ]
    )
    got = m.loglik("UCB", {"lambda": np.array([th]), "beta": np.array([b]), "tau": np.array([t])})[0]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    prior = cfg.prior_array("UCB")
    x = np.log([th, b, t])
    zz = (x - prior[:, 0]) / prior[:, 1]
    logprior = (-0.5 * zz**2 - np.log(prior[:, 1]) - 0.5 * np.log(2 * np.pi)).sum()
    assert m.density("UCB").value(x[None])[0] == pytest.approx(want.sum() + logprior, rel=1e-10)
    draws = m.predict("UCB", {"lambda": np.array([th] * 3), "beta": np.array([b] * 3), "tau": np.array([t] * 3)}, rng)
    assert ((draws["choice"] == PAD) == pad[None]).all() and (draws["choice"][:, ~pad] < 30).all()
    post = xr.Dataset({"tau": (("chain", "draw"), np.ones((1, 2)))}, attrs={"subject": 3, "context": "1d"})
    idata = az.InferenceData(posterior=post, **m.data_groups())
    back = GridSearchModel.from_fit(idata)
    np.testing.assert_array_equal(back.round_lengths, lengths)
    np.testing.assert_array_equal(back.choices, ch)
    assert back.options == line  # the option set travels with the fit (constant_data)
    # the 2020 grid's fits hold no option set: their data groups are what they always were
    full = GridRounds(3, "spatial", np.arange(1, 3), rng.integers(0, 64, (2, 5)), np.full((2, 5), 50.0))
    assert set(GridSearchModel(full, cfg).data_groups()) == {"observed_data"}


@pytest.mark.parametrize("surrogate", ["GP", "BMT"])
@pytest.mark.parametrize("rule", [False, "wu2020", "wu2018", "wu2018-line"])
def test_value_only_kernel_is_the_gradient_kernels_value(data, surrogate, rule):
    """The value-only kernel (what the likelihood at many draws runs: bridge sampling, LOO) gives the gradient
    kernel's values to the bit for every family, local or not, under every choice rule, at taus where the
    published clamps decide and where they do not; so does the exact GP's round-by-round evaluation."""
    from ibo_pymc.tasks.gridsearch.choice import (
        REGISTRY,
        _loglik_kernel,
        _loglik_values,
        family_draws,
        local_weights,
    )
    from ibo_pymc.tasks.gridsearch.rules import rule_code

    ch, y = data
    lengths = np.array([12, 12, 7, 2])
    post = (
        gp_posterior(ch, y, 0.8, grad=True, lengths=lengths)
        if surrogate == "GP"
        else bmt_posterior(ch, y, 0.5, grad=True, lengths=lengths)
    )
    code = rule_code(rule)
    checked = 0
    for family, fcode in REGISTRY.items():
        wloc = local_weights(GRID_8X8, rule) if family.startswith("L-") else np.ones((1, 1))
        eps = family_draws(family, 64)
        for beta, tau in ((0.4, 0.05), (2.0, 1e-4), (0.1, 3.0)):
            ll, g, lv = np.empty(4), np.empty((4, 3)), np.empty(4)
            args = (ch, y, lengths, fcode, beta, tau, code, wloc, eps)
            _loglik_kernel(*post, *args, ll, g)
            _loglik_values(post[0], post[1], *args, lv)
            assert ll.tobytes() == lv.tobytes(), (family, beta, tau)
            if surrogate == "GP" and code == 0:
                got = density._gp_values(ch, y, lengths, GRID_8X8.sqdist, wloc, eps, fcode, 0.8, beta, tau)
                assert got.tobytes() == ll.tobytes(), (family, beta, tau)
            checked += 1
    assert checked == 36


@pytest.mark.parametrize("family", ["UCB", "EI", "PI", "L-UCB"])
def test_zero_divisors_give_values_that_are_not_finite(data, family):
    """The choice kernels divide without Numba's zero check (so that their loops vectorise): where they divide by
    zero (tau 0; tau squared underflowing, tau 1e-170, in the gradient; EI's and PI's standard deviation 0) the
    log-likelihood or its gradient is not finite, from both kernels alike, and nothing is raised; at tau 1e-150
    (tau squared 1e-300) everything the gradient kernel gives is a number or an infinity."""
    from ibo_pymc.tasks.gridsearch.choice import _loglik_values, family_code, local_weights

    ch, y = data
    mu, var, dmu, dvar = gp_posterior(ch, y, 0.8, grad=True)
    wloc = local_weights(GRID_8X8) if family.startswith("L-") else np.ones((1, 1))
    cases = [(var, 0.0), (var, 1e-170)]
    if family in ("EI", "PI"):
        cases.append((np.zeros_like(var), 0.1))
    for v, tau in cases:
        ll, g = choice_loglik((mu, v, dmu, dvar), ch, y, family, 0.5, tau)
        assert not (np.isfinite(ll).all() and np.isfinite(g).all()), (family, tau)
        lv = np.empty(4)
        _loglik_values(mu, v, ch, y, np.full(4, 12), family_code(family), 0.5, tau, 0, wloc, np.zeros((1, 1)), lv)
        assert lv.tobytes() == ll.tobytes(), (family, tau)
    ll, g = choice_loglik((mu, var, dmu, dvar), ch, y, family, 0.5, 1e-150)
    assert not np.isnan(ll).any() and not np.isnan(g).any()
