"""Circular HDI regions: against closed-form truth; a fit's credible and prediction bands."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibo_pymc.tasks.hotspot.circular import wrap_angle
from ibo_pymc.tasks.hotspot.kernel import logpdf as wrapped_cauchy_mixture_logpdf
from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_random
from ibo_pymc.tasks.hotspot.regions import (
    arc_length,
    arcs_contain,
    circular_hdi,
    density_hdi,
)


def wc_half_width(gamma, prob):
    """Half-width a of the HDI [mu - a, mu + a] of one wrapped Cauchy (closed form).

    P(|x - mu| <= a) = (2 / pi) arctan(coth(gamma / 2) tan(a / 2)).
    """
    return 2 * np.arctan(np.tan(np.pi * prob / 2) * np.tanh(gamma / 2))


def true_mass(arcs, theta_star, gamma, w, n=200_000):
    """Mass of the exact mixture density inside the arcs (fine midpoint rule)."""
    x = -np.pi + (np.arange(n) + 0.5) * 2 * np.pi / n
    p = np.exp(wrapped_cauchy_mixture_logpdf(x, theta_star, gamma, w))
    return float((p * arcs_contain(arcs, x)).sum() * 2 * np.pi / n)


@pytest.mark.parametrize("mu", [0.4, np.pi - 0.1, -np.pi + 0.05])
@pytest.mark.parametrize("gamma", [0.05, 0.3])
def test_single_wrapped_cauchy_hdi_is_the_closed_form_arc(mu, gamma):
    rng = np.random.default_rng(1)
    x = wrap_angle(mu + gamma * rng.standard_cauchy(40_000))
    arcs = circular_hdi(x, 0.95)
    a = wc_half_width(gamma, 0.95)
    assert len(arcs) == 1
    # the arc is centred on mu (also when it passes through +-pi) and has the true length
    lo = arcs[0][0]
    centre = wrap_angle(lo + arc_length(arcs) / 2)
    assert abs(wrap_angle(centre - mu)) < 0.05 + 0.1 * a
    assert arc_length(arcs) == pytest.approx(2 * a, rel=0.06)
    assert true_mass(arcs, mu, gamma, 1.0) == pytest.approx(0.95, abs=0.01)


def test_bimodal_hdi_is_two_arcs_with_the_exact_mass():
    rng = np.random.default_rng(2)
    ts, gamma = 2.2, 0.08
    x = wc_mixture_random(np.full(60_000, ts), gamma, 0.5, rng=rng)
    arcs = circular_hdi(x, 0.9)
    assert len(arcs) == 2
    for (lo, hi), centre in zip(arcs, (-ts, ts)):
        assert lo < centre < hi
    assert true_mass(arcs, ts, gamma, 0.5) == pytest.approx(0.9, abs=0.01)


def test_density_hdi_wraps_through_pi():
    n = 360
    grid = -np.pi + (np.arange(n) + 0.5) * 2 * np.pi / n
    dens = np.exp(wrapped_cauchy_mixture_logpdf(grid, np.pi, 0.2, 1.0))
    ((lo, hi),) = density_hdi(grid, dens, 0.8)
    assert lo > 0 > hi  # one arc through +-pi
    a = wc_half_width(0.2, 0.8)
    assert arc_length([(lo, hi)]) == pytest.approx(2 * a, abs=2 * 2 * np.pi / n)


@settings(max_examples=30, deadline=None)
@given(
    ts=st.floats(0.0, np.pi),
    gamma=st.floats(0.01, np.pi / 4),
    w=st.floats(0.0, 1.0),
    prob=st.floats(0.5, 0.99),
)
def test_density_hdi_holds_the_requested_mass(ts, gamma, w, prob):
    n = 720
    grid = -np.pi + (np.arange(n) + 0.5) * 2 * np.pi / n
    dens = np.exp(wrapped_cauchy_mixture_logpdf(grid, ts, gamma, w))
    arcs = density_hdi(grid, dens, prob)
    inside = arcs_contain(arcs, grid)
    mass = dens[inside].sum() / dens.sum()
    assert prob <= mass + 1e-9
    # minimal: dropping the least dense kept cell would fall short
    assert mass - dens[inside].min() / dens.sum() < prob + 1e-9
    # every kept cell is at least as dense as every dropped one
    if (~inside).any():
        assert dens[inside].min() >= dens[~inside].max() - 1e-12


# --- a fit's regions --------------------------------------------------------------------
def _truth_curve(tables, d, family, param, tau):
    d = np.asarray(d, float)
    return np.array([tables.theta_star(family, param, np.array([x]), tau=tau[1], tau_neg=tau[0])[0] for x in d])


def _fit_synthetic(seed, n=150, draws=300, **truth):
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel
    from tests.tasks.hotspot.model.test_model import synthetic

    tables = load_tables()
    obs = synthetic(n, seed=seed, tables=tables, **truth)
    m = IBOModel(obs, "tau_pm", draws=draws, tune=300, chains=2, seed=seed)
    m.fit(progress=False)
    return m, tables


def _fresh_coverage(reg, tables, truth, rng, per_point=200):
    ts = _truth_curve(tables, reg.delta_r1, truth["family"], truth["param"], truth["tau"])
    hits = []
    for j in range(len(reg.delta_r1)):
        x = wc_mixture_random(np.full(per_point, ts[j]), truth["gamma"], truth["w"], rng=rng)
        hits.append(reg.contains_theta2(j, x).mean())
    return float(np.mean(hits)), ts


TRUTH = {"family": "UCB", "param": 0.8, "tau": (0.2, 0.5), "gamma": 0.2, "w": 0.65}


def test_fit_regions_small():
    """Default suite: a small fit's bands have the right shapes and cover what they should."""
    from ibo_pymc.tasks.hotspot.regions import regions

    m, tables = _fit_synthetic(5, n=120, draws=200, **TRUTH)
    reg = regions(m.idata, np.linspace(-30, 30, 25), n_draws=400)
    assert reg.credible.shape == (25, 2) and len(reg.prediction) == 25
    assert np.all(reg.credible[:, 0] <= reg.curve_median + 1e-12) and np.all(
        reg.curve_median <= reg.credible[:, 1] + 1e-12
    )
    assert reg.family_share[reg.labels.index("UCB")] > 0.9
    cover, ts = _fresh_coverage(reg, tables, TRUTH, np.random.default_rng(0))
    assert 0.9 <= cover <= 0.99
    assert reg.contains_curve(ts).mean() >= 0.7
    # the same seed gives the same bands
    again = regions(m.idata, np.linspace(-30, 30, 25), n_draws=400)
    np.testing.assert_array_equal(again.credible, reg.credible)


@pytest.mark.slow
def test_prediction_region_covers_fresh_draws_at_95():
    from ibo_pymc.tasks.hotspot.regions import regions

    m, tables = _fit_synthetic(11, n=200, draws=1000, **TRUTH)
    reg = regions(m.idata, np.linspace(-33, 33, 45))
    cover, _ = _fresh_coverage(reg, tables, TRUTH, np.random.default_rng(1), per_point=1000)
    assert 0.93 <= cover <= 0.97


@pytest.mark.slow
def test_credible_band_covers_the_true_curve_at_the_nominal_rate():
    from ibo_pymc.tasks.hotspot.regions import regions

    rates = []
    for rep in range(16):
        m, tables = _fit_synthetic(100 + rep, n=100, draws=500, **TRUTH)
        reg = regions(m.idata, np.linspace(-33, 33, 23), n_draws=1000)
        ts = _truth_curve(tables, reg.delta_r1, TRUTH["family"], TRUTH["param"], TRUTH["tau"])
        rates.append(reg.contains_curve(ts).mean())
    assert 0.85 <= float(np.mean(rates)) <= 1.0
