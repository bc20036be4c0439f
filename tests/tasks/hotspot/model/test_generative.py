"""The generative PyMC model: the same density as the fitted one, and predictions drawn from it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ibo_pymc.tasks.hotspot.model.builder import build_model
from ibo_pymc.tasks.hotspot.model.generative import (
    family_probabilities,
    generative_model,
    posterior_predictive,
    prior_predictive_draw,
)


@pytest.fixture(scope="module")
def s28(hotspot):
    return hotspot.observations(28)


def _grad(m, point):
    return dict(zip([v.name for v in m.value_vars], m.compile_dlogp()(point)))


@pytest.mark.parametrize("model", ["u", "tau", "tau_pm"])
def test_marginalised_generative_model_has_the_papers_density(s28, model):
    """pymc_extras.marginalize over family ~ Categorical gives build_model's log-density and gradient."""
    gen = generative_model(s28, model)
    ref = build_model(s28, model)
    assert {v.name for v in gen.free_RVs} == {v.name for v in ref.free_RVs}
    assert "family" not in {v.name for v in gen.free_RVs}
    lg, lr = gen.compile_logp(), ref.compile_logp()
    rng = np.random.default_rng(0)
    start = gen.initial_point()
    for _ in range(3):
        point = {k: v + rng.normal(0, 0.7, np.shape(v)) for k, v in start.items()}
        assert float(lg(point)) == pytest.approx(float(lr(point)), rel=1e-12, abs=1e-9)
        if model != "tau_pm":
            continue  # gradients compared on ũ± (every parameter present); u and ũ: the density
        a, b = _grad(gen, point), _grad(ref, point)
        assert all(np.isfinite(v).all() for v in a.values())
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-9, atol=1e-9)


def test_prior_predictive_draws_from_the_model(s28):
    import pymc as pm

    m = generative_model(s28, "tau_pm", marginalized=False)
    with m:
        prior = pm.sample_prior_predictive(200, random_seed=1)
    x = prior.prior_predictive["theta2"].values
    assert x.shape == (1, 200, s28.n_rounds)
    assert np.all((x > -np.pi) & (x <= np.pi))
    fam = prior.prior["family"].values.ravel()
    assert set(np.unique(fam)) == {0, 1, 2}  # the categorical is sampled, each family about 1/3
    assert abs((fam == 2).mean() - 1 / 3) < 0.12


@pytest.fixture(scope="module")
def fit28(s28):
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    fit = IBOModel(s28, "tau_pm", draws=300, tune=300, chains=2, seed=5)
    fit.fit(progress=False)
    return fit


def test_prior_predictive_draw_is_the_mixture_at_the_drawn_truth(s28):
    """One joint draw (truth, theta2): theta2 follows the wrapped-Cauchy mixture at the drawn parameters (PIT
    uniform)."""
    from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.kernel import logpdf

    tables = load_tables()
    n = 400
    d = np.random.default_rng(2).uniform(-34, 34, n)
    obs = SubjectObservations(
        subject=0,
        user_id=0,
        session_id=np.arange(1, n + 1),
        round_index=np.arange(1, n + 1),
        delta_r1=d,
        theta2=np.zeros(n),
    )
    truth, x = prior_predictive_draw(obs, "tau_pm", tables=tables, random_seed=11)
    again, y = prior_predictive_draw(obs, "tau_pm", tables=tables, random_seed=11)
    assert truth == again and np.array_equal(x, y)  # seeded
    assert set(truth) == {"family", "xi_pi", "xi_ei", "p_ucb", "gamma", "w", "tau_neg", "tau_pos"}
    fam = truth["family"]
    param = truth[{"PI": "xi_pi", "EI": "xi_ei", "UCB": "p_ucb"}[fam]]
    ts = tables.theta_star(fam, param, d, tau=truth["tau_pos"], tau_neg=truth["tau_neg"])
    grid = np.linspace(-np.pi, np.pi, 20001)
    pdf = np.exp(logpdf(grid[None, :], ts[:, None], truth["gamma"], truth["w"]))
    cdf = np.cumsum(pdf, axis=1)
    cdf /= cdf[:, -1:]
    pit = np.array([np.interp(xi, grid, c) for xi, c in zip(x, cdf)])
    assert stats.kstest(pit, "uniform").pvalue > 0.001
    # and not the mixture at another truth
    other = tables.theta_star(fam, param, d, tau=truth["tau_pos"] + 0.8, tau_neg=truth["tau_neg"] + 0.8)
    wrong = np.exp(logpdf(grid[None, :], other[:, None], truth["gamma"] * 0.3, truth["w"])).cumsum(axis=1)
    wrong /= wrong[:, -1:]
    pit_wrong = np.array([np.interp(xi, grid, c) for xi, c in zip(x, wrong)])
    assert stats.kstest(pit_wrong, "uniform").pvalue < stats.kstest(pit, "uniform").pvalue


def test_recover_marginals_gives_the_fits_family_probabilities(fit28):
    """pymc_extras.recover_marginals on the marginalised model equals the fit's per-draw family_prob."""
    fp = family_probabilities(fit28.idata, tables=fit28.tables)
    stored = fit28.idata.posterior["family_prob"]
    assert fp.dims == stored.dims and list(fp["family"].values) == list(stored["family"].values)
    np.testing.assert_allclose(fp.values, stored.values, rtol=1e-9, atol=1e-12)


def test_posterior_predictive_from_the_model_matches_the_fits(fit28):
    """pm.sample_posterior_predictive on the generative model reproduces the fit's own predictive (the task's
    simulator, IBOModel.posterior_predictive)."""
    fit = fit28
    pp = posterior_predictive(fit.idata, tables=fit.tables, random_seed=3)
    stored = fit.posterior_predictive()["theta2"]
    assert pp.shape == stored.shape
    a = pp.values.reshape(-1, pp.shape[-1])
    b = stored.values.reshape(-1, pp.shape[-1])
    p = np.array([stats.ks_2samp(a[:, i], b[:, i]).pvalue for i in range(a.shape[1])])
    assert (p < 0.01).mean() <= 0.03, np.sort(p)[:10]
    assert stats.ks_2samp(a.ravel(), b.ravel()).pvalue > 0.001
    # and the draws are not the stored ones: they come from the model's own sampler
    assert not np.array_equal(a, b)
