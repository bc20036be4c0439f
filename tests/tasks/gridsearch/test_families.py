"""The acquisition families' local variants and the 2018 published choice rule (issue 32), each against a direct
NumPy implementation written from the study's own description (``../shared/data/gridsearch2018/README.md``), with
gradients against central differences and the Bayesian density's front ends against each other."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from ibo_pymc.tasks.gridsearch import density
from ibo_pymc.tasks.gridsearch.choice import (
    ACQUISITIONS,
    EPS_2018,
    HAS_BETA,
    REGISTRY,
    base_family,
    choice_loglik,
    choice_probabilities,
    is_local,
    local_weights,
    pmu_values,
    rule_code,
)
from ibo_pymc.tasks.gridsearch.likelihood import loglik
from ibo_pymc.tasks.gridsearch.op import GridLogLik
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet
from ibo_pymc.tasks.gridsearch.surrogate import gp_posterior
from tests.tasks.gridsearch.callback import call_logp

LINE, GRID11 = OptionSet.grid(30, 1), OptionSet.grid(11, 11)


def _rounds(options, seed=4, shape=(3, 10)):
    rng = np.random.default_rng(seed)
    ch = rng.integers(0, options.size, shape)
    ch[0, 3] = ch[0, 2]  # a repeated click: distance 0 from the previous one
    ch[1, 5] = ch[1, 4] + 1 if ch[1, 4] + 1 < options.size else ch[1, 4] - 1
    return ch, rng.uniform(-0.5, 0.5, shape)


def _reference(ch, y, mu, var, family, beta, tau, *, rule="plain", options=GRID_8X8):
    """The choice rule written out as the study describes it (README), one decision at a time."""
    base, local = family.removeprefix("L-"), family.startswith("L-")
    eps = EPS_2018 if rule.startswith("wu2018") else 0.0
    total = np.zeros(len(ch))
    for r in range(len(ch)):
        for t in range(ch.shape[1] - 1):
            m, s = mu[r, t], np.sqrt(var[r, t])
            best = y[r, : t + 1].max()
            with np.errstate(divide="ignore"):  # z of a zero sd: only where EI and PI are not asked for
                z = (m - best + eps) / (s + eps)
            q = {
                # the line code compares each option with itself alone (README: its PMU fits are at chance)
                "PMU": (np.ones_like(m) if rule == "wu2018-line" else pmu_values(m, var[r, t]))
                + (1e-4 if rule.startswith("wu2018") else 0.0),
                "UCB": m + beta * s,
                "EI": (m - best) * stats.norm.cdf(z) + s * stats.norm.pdf(z),
                "PI": stats.norm.cdf(z),
                "mean": m,
                "variance": s,
            }[base].copy()
            if base in ("UCB", "mean", "variance") and rule != "plain":
                low = {"wu2020": q < 1e-4, "wu2018": q < 0, "wu2018-line": q <= 0}[rule]
                q[low] = 1e-4
                q[q > 100] = 100
            if local:
                prev = ch[r, t]
                if rule == "wu2018-line":  # the line code: options numbered 1..30 against the previous 0..29
                    d = np.abs(np.arange(1, options.size + 1) - prev)
                else:
                    d = np.abs(options.coords - options.coords[prev]).sum(1)
                q = q / np.where(d == 0, 1, d)
            p = special.softmax(q / tau)[ch[r, t + 1]]
            if rule != "plain":
                p = min(max(p, 1e-5), 0.99999)
            total[r] += np.log(p)
    return total


def test_the_registry_names_a_local_variant_of_every_family():
    assert set(REGISTRY) == set(ACQUISITIONS) | {"L-" + f for f in ACQUISITIONS}
    assert base_family("L-PI") == "PI" and is_local("L-PI") and not is_local("PI") and "L-UCB" in HAS_BETA
    with pytest.raises(ValueError, match="unknown acquisition family 'L-foo'"):
        base_family("L-foo")
    with pytest.raises(ValueError, match="unknown choice rule 'wu2019'"):
        rule_code("wu2019")


def test_local_weights():
    """1 / Manhattan distance from the previous option, 0 counted as 1; the 2018 line code's is shifted by one."""
    w = local_weights(GRID11)
    assert w[0, 0] == 1 and w[0, GRID11.index(3, 4)] == pytest.approx(1 / 7) and w[5, 5] == 1
    shifted = local_weights(LINE, "wu2018-line")
    # from option 4 the code's distances are |j + 1 - 4|: option 3 at 0 (so 1), option 4 at 1, option 9 at 6
    assert shifted[4, 3] == 1 and shifted[4, 4] == 1 and shifted[4, 9] == pytest.approx(1 / 6)
    np.testing.assert_array_equal(local_weights(LINE, "wu2018"), local_weights(LINE))


@pytest.mark.parametrize("options", [GRID_8X8, LINE, GRID11], ids=["8x8", "line", "11x11"])
@pytest.mark.parametrize("family", [f for f in REGISTRY if f.startswith("L-")])
def test_local_families_value_and_gradient(options, family):
    ch, y = _rounds(options)
    theta, beta, tau = 1.1, 0.3, 0.07
    ll, g = loglik(ch, y, "GP", family, theta, beta, tau, grad=True, options=options)
    mu, var, _, _ = gp_posterior(ch, y, theta, options=options)
    np.testing.assert_allclose(ll, _reference(ch, y, mu, var, family, beta, tau, options=options), atol=1e-9)
    # weighting changes the likelihood (the test would pass for a kernel that ignored the weights otherwise)
    assert not np.allclose(ll, loglik(ch, y, "GP", base_family(family), theta, beta, tau, options=options))
    x, h = np.array([theta, beta, tau]), 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        num = (
            loglik(ch, y, "GP", family, *(x + e), options=options).sum()
            - loglik(ch, y, "GP", family, *(x - e), options=options).sum()
        ) / (2 * h)
        # PMU's estimate has kinks (where a draw's largest competitor changes): a difference may straddle one
        tol = 5e-3 if base_family(family) == "PMU" else 1e-5
        assert g.sum(0)[j] == pytest.approx(num, rel=tol, abs=tol), j


def _edge_posterior(ch, y, options, seed=9):
    """A posterior with the clamps' edge cases: UCB, mean and variance values exactly 0, in (0, 1e-4), negative
    and above 100 (what a fitted GP rarely shows, but the rules differ on)."""
    rng = np.random.default_rng(seed)
    R, T = ch.shape
    mu = rng.normal(0.0, 0.4, (R, T - 1, options.size))
    var = rng.uniform(1e-4, 1.0, mu.shape)
    mu[:, :, 0], var[:, :, 0] = 0.0, 0.0  # q exactly 0 under every one of UCB, mean, variance
    mu[:, :, 1], var[:, :, 1] = 5e-5, 1e-10  # q in (0, 1e-4)
    mu[:, :, 2] = 150.0  # above the upper clamp
    dmu, dvar = rng.normal(0, 0.1, mu.shape), rng.normal(0, 0.01, mu.shape)
    return mu, var, dmu, dvar


@pytest.mark.parametrize("rule", ["wu2018", "wu2018-line", "wu2020"])
@pytest.mark.parametrize("family", ["UCB", "mean", "variance", "EI", "PI", "PMU", "L-UCB", "L-mean", "L-EI"])
def test_published_rules_against_the_description(rule, family):
    if rule == "wu2020" and base_family(family) in ("EI", "PI", "PMU"):
        with pytest.raises(ValueError, match="not EI, PI or PMU"):
            choice_loglik(_edge_posterior(*_rounds(LINE), LINE), *_rounds(LINE), family, 0.3, 0.05, published=rule)
        return
    options = LINE if rule == "wu2018-line" else GRID11
    ch, y = _rounds(options)
    ch[:, 1::3] = np.arange(3)[:, None]  # choose the edge options often
    post = _edge_posterior(ch, y, options)
    ll, _ = choice_loglik(post, ch, y, family, 0.3, 0.05, published=rule, options=options)
    want = _reference(ch, y, post[0], post[1], family, 0.3, 0.05, rule=rule, options=options)
    np.testing.assert_allclose(ll, want, atol=1e-10)


def test_the_2018_rules_differ_where_the_description_says():
    """At a value of exactly 0 the line's rule clamps (<= 0) and the grid's does not (< 0); in (0, 1e-4) the 2020
    rule clamps and the 2018 ones do not; the smoothing moves PI where the standard deviation is about eps."""
    ch, y = _rounds(LINE)
    ch[:, 1:] = np.arange(ch.shape[1] - 1) % 2  # options 0 (mean exactly 0) and 1 (mean 5e-5) chosen in turn
    mu, var, dmu, dvar = _edge_posterior(ch, y, LINE)
    mu[:, :, 2:] = np.random.default_rng(1).uniform(2e-4, 5e-4, mu[:, :, 2:].shape)
    got = {r: choice_loglik((mu, var, dmu, dvar), ch, y, "mean", 0, 1e-4, published=r)[0] for r in RULES_ALL}
    assert not np.allclose(got["wu2018"], got["wu2018-line"]) and not np.allclose(got["wu2018"], got["wu2020"])
    # the code's GP gives the first observed option variance 2^-52, so sd = eps and the smoothing makes that
    # option's z about 1/2 (the plain rule's z about 0): PI differs in every round's first choice
    post = gp_posterior(ch, y, 0.5, grad=True, published="wu2018-line", options=LINE)
    smooth = choice_loglik(post, ch, y, "PI", 0, 0.05, published="wu2018-line")[0]
    assert np.isfinite(smooth).all() and not np.allclose(smooth, choice_loglik(post, ch, y, "PI", 0, 0.05)[0])
    # where every sd is positive the smoothing is negligible
    post = gp_posterior(ch, y, 0.5, grad=True, options=LINE)
    plain = choice_loglik(post, ch, y, "PI", 0, 0.05)[0]
    np.testing.assert_allclose(choice_loglik(post, ch, y, "PI", 0, 0.05, published="wu2018")[0], plain, rtol=1e-5)


RULES_ALL = ("wu2018", "wu2018-line", "wu2020")


@pytest.mark.parametrize("family", ["EI", "PI", "L-EI"])
def test_smoothed_improvement_gradient(family):
    """The 2018 rule's EI and PI (z with the code's eps) differentiate like their values."""
    ch, y = _rounds(GRID11)
    x, h = np.array([0.9, 0.0, 0.05]), 1e-6

    def total(th, t):
        return loglik(ch, y, "GP", family, th, 0.0, t, published="wu2018", options=GRID11).sum()

    _, g = loglik(ch, y, "GP", family, *x, grad=True, published="wu2018", options=GRID11)
    assert g.sum(0)[0] == pytest.approx((total(x[0] + h, x[2]) - total(x[0] - h, x[2])) / (2 * h), rel=1e-5)
    assert g.sum(0)[2] == pytest.approx((total(x[0], x[2] + h) - total(x[0], x[2] - h)) / (2 * h), rel=1e-5)


def test_probabilities_of_a_local_family():
    """The simulator's probabilities: the base family's values times the previous choice's weights."""
    ch, y = _rounds(GRID11)
    mu, var, _, _ = gp_posterior(ch, y, 1.2, options=GRID11)
    best = np.maximum.accumulate(y, axis=1)[:, :-1]
    w = local_weights(GRID11)[ch[:, :-1]]
    p = choice_probabilities(mu, var, best, "L-UCB", 0.4, 0.05, weights=w)
    np.testing.assert_allclose(p, special.softmax((mu + 0.4 * np.sqrt(var)) * w / 0.05, axis=-1))
    ll = np.log(np.take_along_axis(p, ch[:, 1:, None], -1)[..., 0]).sum(1)
    np.testing.assert_allclose(ll, loglik(ch, y, "GP", "L-UCB", 1.2, 0.4, 0.05, options=GRID11), atol=1e-9)
    with pytest.raises(ValueError, match="needs the weights"):
        choice_probabilities(mu, var, best, "L-UCB", 0.4, 0.05)


@pytest.mark.parametrize("family", ["L-UCB", "L-PI", "PMU"])
def test_the_bayesian_density_of_a_local_family(family):
    """The data buffer carries the local weights (and PMU's draws): the density, the nutpie callback, the per-draw
    log-likelihood and the PyTensor Op give the likelihood of ``loglik``."""
    import pytensor
    import pytensor.tensor as pt

    ch, y = _rounds(GRID11)
    th, b, t = 1.3, 0.4, 0.06
    want = loglik(ch, y, "GP", family, th, b, t, options=GRID11)
    got = density.round_loglik_many(ch, y, "GP", family, [th], [b], [t], options=GRID11)[0]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    ucb = family == "L-UCB"
    prior = np.array([[0.0, 1.0], *([[-1.6, 1.5]] if ucb else []), [-3.0, 1.5]])
    buf = density.pack(ch, y, "GP", family, prior, options=GRID11)
    x = np.log([th, b, t] if ucb else [th, t])
    v, g = density.log_density_grad(buf, x)
    z = (x - prior[:, 0]) / prior[:, 1]
    assert v == pytest.approx(want.sum() + (-0.5 * z**2 - np.log(prior[:, 1]) - 0.5 * np.log(2 * np.pi)).sum())
    rc, logp, out = call_logp(buf, x)
    assert rc == 0 and logp == pytest.approx(v, rel=1e-12) and np.allclose(out, g, rtol=1e-12)
    thv = pt.dscalar("th")
    ll, _ = GridLogLik("GP", family, GRID11)(pt.as_tensor(ch), pt.as_tensor(y), thv, b, t)
    np.testing.assert_allclose(pytensor.function([thv], ll, mode="FAST_COMPILE")(th), want, rtol=1e-10)


# --- the authors' saved per-fold results (tests/reference/gridsearch2018) -------------------------------------
def test_the_published_folds_at_their_parameters(gridsearch2018_folder):
    """At each saved fold's parameters, the likelihood of its held-out round under the protocol's rule
    (:mod:`~ibo_pymc.tasks.gridsearch.protocols`: "wu2018" on the grid, "wu2018-line" on the line, its folds
    and its models) is the saved nLL, to 1e-7, for every family, both surrogates, local or not: this checks the
    clamps, the smoothing of EI and PI, the local weights (the line's shifted distance included), the published
    GP's variance at the first observed option (machine epsilon: with 0 instead, PI misses by up to 1.5 nats)
    and the grid's RBFEXI results being the local EI."""
    from pathlib import Path

    import pandas as pd

    from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18
    from ibo_pymc.tasks.gridsearch.protocols import protocol

    ref = pd.read_csv(Path(__file__).parents[2] / "reference" / "gridsearch2018" / "folds_participant1.csv")
    table = g18.load_gridsearch2018(gridsearch2018_folder, progress=False)
    worst = 0.0
    for experiment, saved in ref.groupby("experiment"):
        proto = protocol(f"wu2018-{experiment}")
        gr = g18.grid_rounds(table, 1, experiment)
        folds = {(f.horizon, f.index): f for f in proto.folds(gr)}
        assert len(folds) == {"1d": 16, "2d": 8}[experiment]
        for row in saved.itertuples(index=False):
            m = proto.model(row.model)
            pars = np.exp([p for p in (row.par1, row.par2, row.par3) if np.isfinite(p)])
            beta = pars[1] if len(pars) == 3 else 0.0
            k = folds[(row.horizon, row.leaveoutindex)].test
            n = gr.round_lengths[k]
            ll = loglik(
                gr.choices[k : k + 1, :n],
                gr.y[k : k + 1, :n],
                m.surrogate,
                m.family,
                pars[0],
                beta,
                pars[-1],
                published=proto.rule,
                options=gr.options,
            )
            assert -ll.sum() == pytest.approx(row.nLL, abs=1e-7), (
                experiment,
                row.model,
                row.horizon,
                row.leaveoutindex,
            )
            worst = max(worst, abs(-ll.sum() - row.nLL))
    assert len(ref) == 168 and worst < 1e-7


def test_the_protocols(gridsearch2018_folder):
    """24 models per 2018 experiment (two surrogates x six acquisition functions x local or not) named as the
    authors' files; the saved results' exceptions (the grid's RBFEXI is the local EI, the line's PMU at chance);
    the folds: within each horizon on 2018's rounds (every round held out once, trained on the others of its
    length), over all the rounds in 2020; pseudo-R2 against choosing at random."""
    import math

    from ibo_pymc.errors import InputError
    from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18
    from ibo_pymc.tasks.gridsearch.data import GridRounds
    from ibo_pymc.tasks.gridsearch.protocols import protocol

    line, grid, p20 = protocol("wu2018-1d"), protocol("wu2018-2d"), protocol("wu2020")
    assert len(line.models) == len(grid.models) == 24 and len({m.name for m in grid.models}) == 24
    assert grid.model("RBFEXI").family == "L-EI" and line.model("RBFEXI").family == "EI"
    assert grid.model("LBMTGV") == grid.model("LBMTGV") and grid.model("LBMTGV").family == "L-variance"
    assert line.chance == {"RBFPMU", "BMTPMU"} and not grid.chance
    assert (line.rule, grid.rule, line.log_bounds, grid.log_bounds) == ("wu2018-line", "wu2018", (-5, 4), (-5, 5))
    with pytest.raises(InputError, match="'RBFFOO' is not a model of wu2018-2d"):
        grid.model("RBFFOO")
    table = g18.load_gridsearch2018(gridsearch2018_folder, progress=False)
    for proto, experiment in ((line, "1d"), (grid, "2d")):
        gr = g18.grid_rounds(table, 5, experiment)
        folds = proto.folds(gr)
        assert sorted(f.test for f in folds) == list(range(gr.n_rounds))
        for f in folds:
            lengths = gr.round_lengths[[f.test, *f.train]]
            assert (lengths == f.horizon + 1).all() and len(f.train) == gr.n_rounds // 2 - 1
        assert proto.r2(gr.n_choices * math.log(gr.options.size), gr) == pytest.approx(0.0)
    gr20 = GridRounds(1, "spatial", np.arange(1, 10), np.zeros((9, 20), int), np.full((9, 20), 50.0))
    folds = p20.folds(gr20)
    assert [f.test for f in folds] == list(range(9)) and all(len(f.train) == 8 and f.horizon is None for f in folds)


# --- PMU -----------------------------------------------------------------------------------------------------
def _pmu_direct(mu, var, eps):
    """The conditional Monte Carlo estimate written out: per draw, each option's probability of beating the
    largest other draw."""
    s = np.sqrt(var)
    x = mu + s * eps  # (S, P)
    order = np.argsort(-x, axis=1)
    top, second = x[np.arange(len(x)), order[:, 0]], x[np.arange(len(x)), order[:, 1]]
    others = np.where(np.arange(len(mu))[None, :] == order[:, :1], second[:, None], top[:, None])
    return stats.norm.cdf((mu[None, :] - others) / s[None, :]).mean(0)


def _pmu_exact(mu, var, which):
    """The exact probability that each option of ``which`` is the largest (adaptive quadrature)."""
    from scipy import integrate

    s, out = np.sqrt(var), np.empty(len(which))
    for n, j in enumerate(which):
        o = np.delete(np.arange(len(mu)), j)

        def f(z, j=j, o=o):
            return stats.norm.pdf(z) * np.exp(stats.norm.logcdf((mu[j] + s[j] * z - mu[o]) / s[o]).sum())

        points = sorted(set(np.clip((mu[o] - mu[j]) / s[j], -9, 9).round(6)))[:100]
        out[n] = integrate.quad(f, -9, 9, limit=500, points=points, epsabs=1e-13)[0]
    return out


@pytest.mark.parametrize("options", [LINE, GRID11], ids=["line", "11x11"])
def test_pmu_estimate_and_its_error(options):
    """PMU's values are the conditional Monte Carlo estimate on the fixed draws (to 1e-12 against a direct
    implementation), within 0.02 of the exact probability and 0.003 on average over the 30 likeliest options of
    three decisions (adaptive quadrature; the module docstring states the error), and the same in every call (no
    fresh random numbers)."""
    from ibo_pymc.tasks.gridsearch.choice import PMU_DRAWS, pmu_draws

    ch, y = _rounds(options, shape=(2, 12))
    mu, var, _, _ = gp_posterior(ch, y, 1.5, options=options)
    assert pmu_draws(options.size).shape == (PMU_DRAWS, options.size)
    errors = []
    for t in (0, 5, 10):
        q = pmu_values(mu[0, t], var[0, t])
        np.testing.assert_allclose(q, _pmu_direct(mu[0, t], var[0, t], pmu_draws(options.size)), atol=1e-12)
        # the 30 options most likely to be the largest (the rest have tiny probabilities and errors)
        which = np.argsort(-q)[:30]
        errors.append(np.abs(q[which] - _pmu_exact(mu[0, t], var[0, t], which)))
    errors = np.concatenate(errors)
    assert errors.max() < 0.02 and errors.mean() < 0.003, (errors.max(), errors.mean())
    np.testing.assert_array_equal(pmu_values(mu, var), pmu_values(mu, var))


def test_pmu_normal_cdf_interpolant():
    """PMU's normal CDF is an interpolant (:data:`.choice.PHI_STEP`, the module's stated bound): within 1e-13 of
    ``scipy.special.ndtr`` everywhere, 1e-9 relative where Phi is above 1e-15, exact at the nodes, 0 and 1
    beyond the range, and monotone."""
    import numba
    from scipy import special

    from ibo_pymc.tasks.gridsearch import choice

    phi = numba.njit(lambda a: choice._phi(a))
    x = np.concatenate(
        [
            np.random.default_rng(0).uniform(-9.0, 9.0, 20000),
            np.linspace(-8.6, 8.6, 20001),
            -choice.PHI_RANGE + choice.PHI_STEP * np.arange(0, 8705, 7),
        ]
    )
    got = np.array([phi(a) for a in x])
    want = special.ndtr(x)
    assert np.max(np.abs(got - want)) < 1e-13
    body = want > 1e-15
    assert np.max(np.abs(got - want)[body] / want[body]) < 1e-9
    assert got[x <= -choice.PHI_RANGE].max(initial=0.0) == 0.0 and got[x >= choice.PHI_RANGE].min(initial=1.0) == 1.0
    order = np.argsort(x)
    assert np.all(np.diff(got[order]) >= -1e-16)


def test_the_softmax_exponential():
    """The plain rule's softmax takes its exponentials from :func:`.choice._exp_nonpositive`: within 1 ulp of
    ``math.exp`` over the whole range of a non-positive argument (relative 2.3e-16), exactly 1 at 0, 0 below
    the floor (where exp is under 1e-307), NaN for NaN, at any length (LLVM's vector loop and its remainder)."""
    import math

    from ibo_pymc.tasks.gridsearch import choice

    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            [0.0, -0.0, -1e-300, -5e-324, -1e-17, -0.34657359, -0.34657360, -700.0, -707.99, -708.0, -708.01, -745.2],
            -rng.exponential(1.0, 5000),
            -rng.uniform(0.0, 708.0, 20000),
            -np.exp(rng.uniform(-40.0, 6.5, 5000)),
        ]
    )
    for n in (len(x), 121, 30, 7, 1):
        part = x[:n].copy()
        got = np.empty(n)
        choice._exp_nonpositive(part, got, np.empty(n), np.empty(n))
        want = np.array([math.exp(v) if v > choice._EXP_FLOOR else 0.0 for v in part])
        assert np.all(np.abs(got - want) <= 2.3e-16 * want), n
    assert got[0] == 1.0
    below = np.array([-708.01, -745.2, -1e6, -np.inf])
    out = np.ones(4)
    choice._exp_nonpositive(below, out, np.empty(4), np.empty(4))
    assert np.array_equal(out, np.zeros(4))
    nan = np.array([np.nan, -1.0])
    choice._exp_nonpositive(nan, out[:2], np.empty(2), np.empty(2))
    assert np.isnan(out[0]) and out[1] == math.exp(-1.0)  # a NaN value still reaches the density


def test_a_tiny_temperature_scores_choices_not_rounding():
    """The plain rule's log-probability is ``(q_c - max q) / tau - log(sum)``, the difference first. As
    ``q_c / tau - (max q / tau + log(sum))`` (as before) the log of the sum vanished in the rounding of
    ``max q / tau`` once tau was tiny, so that a choice among tied options scored 0 instead of -log(ties), and the
    values between jumped by whole nats: on the Wu 2018 grid (participants 31 and 55) an EI mode at tau 1e-18,
    lambda 0.03 out-scored every real explanation by 500 nats. Now a choice among k options tied for the
    largest value scores -log(k) at any tau below their gap to the rest, and the published rules, which keep
    the earlier order of operations for their committed fits, never reach such a tau (their bounds)."""
    P, T = 12, 4
    mu = np.full((1, T, P), 0.4)
    mu[..., 6:] = 0.1  # options 0-5 tie for the largest mean (six ties of 0.4: a sum of their shares rounds)
    var = np.full((1, T, P), 0.5)
    zero = np.zeros((1, T, P))
    ch = np.array([[5, 0, 2, 1]])
    y = np.zeros((1, T))
    for tau in (1e-3, 1e-8, 1e-18, 1e-30):
        ll, g = choice_loglik((mu, var, zero, zero), ch, y, "mean", 0.0, tau)
        np.testing.assert_allclose(ll, 3 * -np.log(6.0), rtol=1e-12)
        # the expected value equals the chosen one's but for the untied options' shares (e^-300 at tau 1e-3):
        # no pull on tau (computed as q_c - E q, rounding gave 1e-10 at tau 1e-3 and 1e19 at tau 1e-18)
        assert abs(g[0, 2]) < 1e-100
    # and where values are distinct, the log-probability agrees with a direct softmax at a tiny tau
    mu2 = mu + np.linspace(0.0, 1e-15, P)  # gaps of about one ulp of 0.4 and more
    ll, _ = choice_loglik((mu2, var, zero, zero), ch, y, "mean", 0.0, 1e-16)
    want = sum(np.log(special.softmax((mu2[0, t] - mu2[0, t].max()) / 1e-16)[ch[0, t + 1]]) for t in range(T - 1))
    np.testing.assert_allclose(ll[0], want, rtol=1e-6)


def test_pmu_likelihood_and_gradient():
    """The kernel's PMU: softmax of the estimate over tau; the gradient in lambda and tau against central
    differences (a step of 1e-7: the estimate's kinks are far apart at that scale)."""
    ch, y = _rounds(LINE)
    for theta in (0.7, 1.1, 1.6):
        ll, g = loglik(ch, y, "GP", "PMU", theta, 0.0, 0.07, grad=True, options=LINE)
        mu, var, _, _ = gp_posterior(ch, y, theta, options=LINE)
        np.testing.assert_allclose(ll, _reference(ch, y, mu, var, "PMU", 0.0, 0.07, options=LINE), atol=1e-9)
        h = 1e-7
        for j, (up, dn) in enumerate((((theta + h, 0.07), (theta - h, 0.07)), ((theta, 0.07 + h), (theta, 0.07 - h)))):
            num = (
                loglik(ch, y, "GP", "PMU", up[0], 0.0, up[1], options=LINE).sum()
                - loglik(ch, y, "GP", "PMU", dn[0], 0.0, dn[1], options=LINE).sum()
            ) / (2 * h)
            assert g.sum(0)[2 * j] == pytest.approx(num, rel=1e-5, abs=1e-6), (theta, j)


def test_pmu_published_rule_and_the_authors_saved_folds(gridsearch2018_folder):
    """The 2018 rule adds 0.0001 to PMU. The authors' saved PMU folds cannot be matched fold by fold: their
    estimate draws fresh random numbers at every evaluation (and on the line it was at chance, 5 ln 30 per short
    round: the shared copy's README). On the grid, participant 1's saved held-out nLL at their parameters
    (tau near 0.008 amplifies their sampling noise) is within 6 nats per fold of ours."""
    from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18

    ch, y = _rounds(GRID11)
    post = gp_posterior(ch, y, 1.2, grad=True, published="wu2018", options=GRID11)
    ll = choice_loglik(post, ch, y, "PMU", 0.0, 0.05, published="wu2018", options=GRID11)[0]
    want = _reference(ch, y, post[0], post[1], "PMU", 0.0, 0.05, rule="wu2018", options=GRID11)
    np.testing.assert_allclose(ll, want, atol=1e-10)
    saved = [  # analysis2D/modelResults/final/RBFPMU1.csv: horizon, fold, nLL, log lambda, log tau
        (20, 1, 92.2136021142117, -0.587808407767334, -4.87769499826291),
        (20, 2, 97.4028122172473, 2.94473271877525, -1.25273806521378),
        (40, 1, 190.958716936533, -3.47808963486688, -4.6697056818732),
        (40, 4, 192.750711578408, -4.83343273587337, -4.85124560920573),
    ]
    gr = g18.grid_rounds(g18.load_gridsearch2018(gridsearch2018_folder, progress=False), 1, "2d")
    for h, k, nll, lam, tau in saved:
        r = np.flatnonzero(gr.round_lengths - 1 == h)[k - 1]
        n = gr.round_lengths[r]
        ours = -loglik(
            gr.choices[r : r + 1, :n],
            gr.y[r : r + 1, :n],
            "GP",
            "PMU",
            np.exp(lam),
            0.0,
            np.exp(tau),
            published="wu2018",
            options=gr.options,
        ).sum()
        assert abs(ours - nll) < 6.0, (h, k, ours, nll)


def test_the_draws_likelihood_refuses_points_outside_the_support():
    """``density.round_loglik_many`` (the LOO's and the summaries' likelihood at many draws) refuses a tau or a
    surrogate parameter of 0 or inf with a FloatingPointError before its parallel kernel runs: the kernel divides
    by both, and an exception inside a parallel loop reached the caller as a SystemError or as rows of garbage
    (log-likelihoods of 1e276 at tau = 0)."""
    ch, y = _rounds(GRID_8X8, shape=(2, 6))
    ok = density.round_loglik_many(ch, y, "GP", "UCB", [1.0, 2.0], [0.5, 0.5], [0.1, 0.2])
    assert ok.shape == (2, 2) and np.isfinite(ok).all() and (ok < 0).all()
    for theta, tau in (([1.0, 0.0], [0.1, 0.2]), ([1.0, 2.0], [0.1, 0.0]), ([np.inf, 2.0], [0.1, 0.2])):
        with pytest.raises(FloatingPointError, match="1 of 2 parameter points"):
            density.round_loglik_many(ch, y, "GP", "UCB", theta, [0.5, 0.5], tau)
