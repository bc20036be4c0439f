"""The engine's hierarchical model: the population likelihood's kernel against numpy, its gradient, the two-stage
identity, the population model on hand-made subjects' draws (families with and without a shape parameter)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from ibo_pymc.engine import hierarchical as H
from ibo_pymc.engine.priors import LogNormalPrior


def _reference(z, base, a, mu, sd):
    lr = H._log_ratio(z, base, mu[:, :, None, :], sd[:, :, None, :], np)
    return special.logsumexp(a + special.logsumexp(lr, axis=-1) - np.log(z.shape[2]), axis=-1).sum()


def _counts(z):
    return np.full(z.shape[:2], z.shape[2], dtype=np.int64)


def _inputs(seed=0, N=4, C=3, S=50, P=3):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (N, C, S, P))
    a = rng.normal(-5, 2, (N, C))
    a[1, 2] = -np.inf  # a padded component
    return z, _log_logistic(z), a, rng.normal(0, 1, (N, C, P)), rng.uniform(0.4, 2.0, (N, C, P))


def _log_logistic(z):
    return stats.logistic.logpdf(z).sum(axis=-1)


def test_kernel_value_and_gradient():
    z, base, a, mu, sd = _inputs()
    v, g_a, g_mu, g_sd = H._population_kernel(z, base, a, mu, sd, _counts(z))
    assert v == pytest.approx(_reference(z, base, a, mu, sd), rel=1e-12)
    eps = 1e-6
    for arr, grad in ((mu, g_mu), (sd, g_sd)):
        for idx in [(0, 0, 0), (2, 1, 2), (3, 2, 1)]:
            up = arr.copy()
            up[idx] += eps
            args = (a, up, sd) if arr is mu else (a, mu, up)
            fd = (_reference(z, base, *args) - v) / eps
            assert grad[idx] == pytest.approx(fd, rel=1e-4, abs=1e-7)
    up = a.copy()
    up[0, 1] += eps
    assert g_a[0, 1] == pytest.approx((_reference(z, base, up, mu, sd) - v) / eps, rel=1e-4)
    assert g_a[1, 2] == 0 and (g_mu[1, 2] == 0).all()


def test_op_gradient_in_pytensor():
    import pytensor
    import pytensor.tensor as pt

    z, base, a, mu, sd = _inputs(1)
    m, s = pt.dtensor3("m"), pt.dtensor3("s")
    out = H.population_loglik(z, base, a, m, s, _counts(z))[0]
    f = pytensor.function([m, s], [out, *pytensor.grad(out, [m, s])])
    v, gm, gs = f(mu, sd)
    ref = H._population_kernel(z, base, a, mu, sd, _counts(z))
    np.testing.assert_allclose([v], [ref[0]])
    np.testing.assert_allclose(gm, ref[2])
    np.testing.assert_allclose(gs, ref[3])


def test_two_stage_identity():
    """A subject with likelihood N(m; z, s) in one parameter z under the logistic prior (the uniform prior on the
    logit scale): with draws of its posterior and its evidence Z, the kernel's estimate of p(y | mu, sigma) is
    the exact integral N(m; mu, sqrt(s^2 + sigma^2))."""
    rng = np.random.default_rng(5)
    m, s = 0.8, 0.6
    logistic = stats.logistic.pdf
    Z = integrate.quad(lambda t: stats.norm.pdf(m, t, s) * logistic(t), -30, 30)[0]
    # posterior draws by rejection: propose from N(m, s), accept with probability logistic(z) / (1/4)
    prop = rng.normal(m, s, 400_000)
    draws = prop[rng.random(prop.size) < 4 * logistic(prop)][:100_000]
    z = draws.reshape(1, 1, -1, 1)
    base = _log_logistic(z)
    for mu, sigma in [(0.0, 1.0), (1.5, 0.5), (-1.0, 2.0)]:
        v = H._population_kernel(
            z, base, np.array([[np.log(Z)]]), np.full((1, 1, 1), mu), np.full((1, 1, 1), sigma), _counts(z)
        )[0]
        exact = stats.norm.logpdf(m, mu, np.hypot(s, sigma))
        assert v == pytest.approx(exact, abs=0.02)


def test_population_model_samples_from_synthetic_subjects():
    """The PyMC model over SubjectDraws made by hand: it builds, its logp is the kernel's plus the priors', and it
    samples."""
    import pymc as pm

    rng = np.random.default_rng(2)
    fams = ("PI", "EI", "UCB")
    subs = []
    for n in range(5):
        k = n % 3
        z = rng.normal([0.5 * k, -1.0, 0.3, -2.0, -1.5], 0.4, (1, 200, 5))
        subs.append(
            H.SubjectDraws(
                n + 1,
                "tau_pm",
                fams,
                np.array([k]),
                np.array([-50.0 - n]),
                z,
                ("param", "gamma", "w", "tau_neg", "tau_pos"),
            )
        )
    model = H.build_population_model(subs)
    assert set(model.named_vars) >= {"mu", "sigma", "mu_shape", "sigma_shape", "family_frequency"}
    with model:
        idata = pm.sample(
            draws=100, tune=100, chains=1, random_seed=1, progressbar=False, compute_convergence_checks=False
        )
    assert idata.posterior["mu"].sel(parameter="gamma").mean() == pytest.approx(-1.0, abs=0.6)


def _subjects(rng, n=4):
    fams = ("PI", "EI", "UCB")
    cols = ("param", "gamma", "w", "tau_neg", "tau_pos")
    subs = []
    for i in range(n):
        comps = np.array([2]) if i % 2 else np.array([0, 2])  # one or two components
        S = 150 + 50 * i  # different numbers of draws: thinned to the smallest, evenly
        z = rng.normal([-1.0, -1.2, 0.4, -2.0, -1.5], 0.3, (len(comps), S, 5))
        subs.append(H.SubjectDraws(i + 1, "tau_pm", fams, comps, np.full(len(comps), -60.0), z, cols))
    return subs


def test_population_stage_resamples_subjects():
    """fit_population on hand-made draws (subjects with different numbers of components and of draws): the
    subjects' resampled posteriors, their family probabilities and Pareto k; seeded; one layout required."""
    rng = np.random.default_rng(4)
    subs = _subjects(rng)
    h = H.fit_population(subs, draws=100, tune=100, chains=2, seed=1, cores=1)
    sub = h.idata["subject_posterior"]
    assert sub["gamma"].shape == (2, 100, 4)
    assert set(np.unique(sub["family_draw"].sel(subject=2))) <= {2}  # its only component is UCB
    np.testing.assert_allclose(sub["family_prob"].sum("family"), 1.0)
    k = h.idata["subject_diagnostics"]
    assert (k["pareto_k"] <= k["pareto_k_max"]).all()
    one = h.subject_idata(1)
    assert one.posterior.attrs["model"] == "tau_pm" and one.posterior["family_draw"].attrs["labels"] == "PI,EI,UCB"
    assert {"shape_PI", "shape_EI", "shape_UCB", "gamma"} <= set(one.posterior.data_vars)
    # the population medians on the parameters' own scale: U(0, 1) here, so sigmoid(mu)
    post = h.idata.posterior
    np.testing.assert_allclose(
        post["median"].sel(parameter="gamma"), 1 / (1 + np.exp(-post["mu"].sel(parameter="gamma")))
    )
    again = H.fit_population(subs, draws=100, tune=100, chains=2, seed=1, cores=1)
    np.testing.assert_array_equal(again.idata["subject_posterior"]["w"].values, sub["w"].values)  # seeded
    other = H.SubjectDraws(9, "tau", subs[0].families, np.array([0]), np.zeros(1), subs[0].z[:1], subs[0].columns)
    with pytest.raises(ValueError, match="needs one"):
        H.fit_population([subs[0], other])
    with pytest.raises(ValueError, match="subject 1 appears twice"):
        H.fit_population([subs[0], subs[0]])


def test_families_without_a_shape_parameter_and_log_normal_priors():
    """A task like the grid one: one family with a shape parameter (log-normal beta), two without, log-normal
    shared parameters. Components without a shape parameter contribute nothing through column 0 (its log
    density cancels exactly), the population of the shape parameter is the one family's, and the medians come
    back through exp on the standardised scale."""
    rng = np.random.default_rng(7)
    fams = ("UCB", "mean", "EI")
    lam, tau, beta = LogNormalPrior(-0.5, 1.0), LogNormalPrior(-3.0, 1.0), LogNormalPrior(-3.0, 1.5)
    subs = []
    for n in range(6):
        k = n % 3
        S = 300
        z = np.stack(
            [rng.normal(0.5, 0.2, S) if k == 0 else np.zeros(S), rng.normal(0.8, 0.2, S), rng.normal(-0.4, 0.2, S)],
            axis=-1,
        )[None]
        subs.append(
            H.SubjectDraws(
                n + 1,
                "GP",
                fams,
                np.array([k]),
                np.array([-40.0]),
                z,
                ("param", "lambda", "tau"),
                priors=(lam, tau),
                shape_priors=(("beta", beta), None, None),
            )
        )
    # column 0 of a family without one is N(0, 1) at 0: with mu 0 and sd 1 there the ratio's column is 0
    s = subs[1]
    full = s.log_base()
    shared_only = sum(H._log_density(p, s.z[..., j + 1]) for j, p in enumerate(s.priors))
    np.testing.assert_allclose(full, shared_only - 0.5 * np.log(2 * np.pi))
    model = H.build_population_model(subs)
    assert list(model.coords["shape_family"]) == ["UCB"] and model["mu_shape"].eval().shape == (1,)
    h = H.fit_population(subs, draws=200, tune=200, chains=2, seed=2, cores=1)
    post = h.idata.posterior
    np.testing.assert_allclose(
        post["median"].sel(parameter="lambda"), np.exp(lam.center + lam.scale * post["mu"].sel(parameter="lambda"))
    )
    assert float(post["median_shape"].sel(shape_family="UCB").median()) == pytest.approx(
        np.exp(beta.center + beta.scale * 0.5), rel=0.5
    )
    sub = h.idata["subject_posterior"]
    assert set(np.unique(sub["family_draw"].sel(subject=2))) == {1}
    assert np.isnan(sub["shape_parameter"].sel(subject=2)).all()  # "mean" has no shape parameter
    assert np.isfinite(sub["shape_parameter"].sel(subject=1)).all()
    assert set(h.population()["quantity"]) == {"family_frequency", "median", "sigma", "median_shape", "sigma_shape"}
