"""The engine's PSIS-LOO tiers on a component whose draws and densities are known exactly (a normal mean), and
what happens where moment matching moves draws to points at which a density cannot be evaluated."""

from __future__ import annotations

import numpy as np
import pytest

from ibo_pymc.engine.loo import K_THRESHOLD, ComponentDraws, psis_components

Y = np.array([0.1, -0.3, 0.2, 0.0, -0.1, 0.3, -0.2, 0.05, 6.0])  # the last observation an outlier


def _piece(log_density=None, seed=0):
    """mu ~ N(0, 10^2), y_i ~ N(mu, 1): the exact posterior's draws (4 chains x 500) and both densities."""
    n = len(Y)
    prec = n + 1 / 100
    mean, sd = Y.sum() / prec, 1 / np.sqrt(prec)
    z = np.random.default_rng(seed).normal(mean, sd, (4, 500, 1))

    def loglik(zz):
        return -0.5 * (Y[None, :] - zz[:, :1]) ** 2 - 0.5 * np.log(2 * np.pi)

    def density(zz):
        return loglik(zz).sum(axis=1) - 0.5 * (zz[:, 0] / 10) ** 2

    return ComponentDraws("normal", 1.0, z, loglik(z.reshape(-1, 1)).reshape(4, 500, n), log_density or density, loglik)


def test_moment_matching_improves_the_outlier():
    plain = psis_components([_piece()], relevance=0.001, moment_match=False)[0]
    assert plain.pareto_k[-1] > K_THRESHOLD  # the outlier's PSIS is not trusted: moment matching is asked for
    mm = psis_components([_piece()], relevance=0.001)[0]
    assert mm.moment_match_error is None and mm.n_moment_matched >= 1
    assert mm.pareto_k[-1] < plain.pareto_k[-1]
    # the exact leave-one-out predictive density of the outlier (a normal model)
    rest = np.delete(Y, -1)
    prec = len(rest) + 1 / 100
    m, v = rest.sum() / prec, 1 / prec + 1
    exact = -0.5 * (Y[-1] - m) ** 2 / v - 0.5 * np.log(2 * np.pi * v)
    assert mm.elpd_i[-1] == pytest.approx(exact, abs=0.3)  # Monte-Carlo error of 2,000 draws: about 0.15


def test_a_density_undefined_where_moment_matching_moves_keeps_the_psis_estimates():
    """A density that fails arithmetically at the moved draws (as the grid task's refuses tau = 0, a
    FloatingPointError) gives up moment matching for that component only: its PSIS estimates stand, the reason
    is kept, and the refits take the units still above the threshold. The density answers at the fit's own
    draws (arviz-stats' first call) and fails at the moved ones, in whichever stage of moment matching."""
    plain = psis_components([_piece()], relevance=0.001, moment_match=False)[0]
    exact = _piece().log_density
    for fail_from in (1, 2, 3):
        calls = []

        def failing(zz, calls=calls, fail_from=fail_from):
            calls.append(1)
            if len(calls) > fail_from:
                raise FloatingPointError("tau outside (0, inf)")
            return exact(zz)

        got = psis_components([_piece(failing)], relevance=0.001)[0]
        assert len(calls) > fail_from and "FloatingPointError" in got.moment_match_error
        np.testing.assert_array_equal(got.elpd_i, plain.elpd_i)
        np.testing.assert_array_equal(got.pareto_k, plain.pareto_k)

    def broken(zz):  # any other failure of a density is a bug, and is raised
        raise SystemError("not arithmetic")

    with pytest.raises((ValueError, SystemError)):
        psis_components([_piece(broken)], relevance=0.001)


def test_a_unit_beyond_the_floats_range_is_estimated_and_left_untrusted():
    """A unit whose log-likelihood spreads over more than 700 nats across the draws, a few draws far below the
    rest (a Laplace-drawn family of small probability on the Wu 2018 grid), breaks PSIS (the Pareto fit divides
    by tail weights that underflow to 0: a NaN elpd): the plain importance-sampling estimate
    in log space stands in, with k infinite, so that the later tiers decide the unit where the component
    matters; the other units keep their PSIS estimates."""
    piece = _piece()
    spread = np.random.default_rng(2).normal(-140.0, 3.0, piece.ll.shape[:2])
    spread[0, :3] = (-3000.0, -2500.0, -1900.0)  # a few draws far out: the tail's weights underflow to 0
    piece.ll = piece.ll.copy()
    piece.ll[..., 0] = spread
    got = psis_components([piece], relevance=0.001, moment_match=False)[0]
    flat = spread.ravel()
    want = np.log(flat.size) - (np.max(-flat) + np.log(np.exp(-flat - np.max(-flat)).sum()))
    assert got.elpd_i[0] == pytest.approx(want, rel=1e-12) and got.pareto_k[0] == np.inf
    plain = psis_components([_piece()], relevance=0.001, moment_match=False)[0]
    np.testing.assert_array_equal(got.elpd_i[1:], plain.elpd_i[1:])
    # with moment matching, the lost unit does not stop the component's other units from being matched
    piece = _piece()
    piece.ll = piece.ll.copy()
    piece.ll[..., 0] = spread
    mm = psis_components([piece], relevance=0.001)[0]
    assert mm.moment_match_error is None and np.isfinite(mm.elpd_i).all()
    assert mm.pareto_k[-1] < plain.pareto_k[-1]  # the outlier, matched
