"""The tabulated GP posterior NUTS samples GP families with: equal to the exact posterior at its nodes, close
between them, a density whose gradient is its own, the exact density outside the nodes; the difference measured
at the draws; the engine's exact resampling beyond the tolerance; the setting's hash."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibo_pymc.engine.config import EngineConfig
from ibo_pymc.engine.density import Density, pyfunc_nutpie_model
from ibo_pymc.engine.fitting import SAMPLING_TOLERANCE, sample_family
from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch.density import log_density, log_density_grad
from ibo_pymc.tasks.gridsearch.model import FAMILIES, GridSearchConfig, GridSearchModel
from ibo_pymc.tasks.gridsearch.options import OptionSet
from ibo_pymc.tasks.gridsearch.simulate import GridTruth, simulate_participant
from ibo_pymc.tasks.gridsearch.surrogate import (
    GP_TABLE_STEP,
    gp_interpolated,
    gp_posterior,
    gp_table,
    gp_table_nodes,
)


@pytest.fixture(scope="module")
def participant(environments):
    truth = GridTruth("UCB", theta=1.0, beta=0.3, tau=0.05)
    return simulate_participant(truth, environments["smooth"], np.random.default_rng(3), subject=902)


@pytest.fixture(scope="module")
def table(participant):
    gr = participant
    lo, h, K = gp_table_nodes(0.0, 1.0)
    return gp_table(gr.choices, gr.y, lo, h, K, lengths=gr.lengths, options=gr.options), lo, h


def _used(gr):
    """The entries the likelihood reads: every round's trials before its last observation."""
    T1 = gr.choices.shape[1] - 1
    n = np.full(gr.choices.shape[0], gr.choices.shape[1]) if gr.lengths is None else gr.lengths
    return np.arange(T1)[None, :] < (n - 1)[:, None]


def test_nodes_cover_the_prior():
    lo, h, K = gp_table_nodes(0.0, 1.0)
    assert (lo, h) == (-3.0, GP_TABLE_STEP) and lo + (K - 1) * h == pytest.approx(3.0)


def test_equal_to_the_exact_posterior_at_the_nodes(participant, table):
    gr = participant
    tab, lo, h = table
    used = _used(gr)
    for k in (0, 17, 60, tab.shape[0] - 1):
        lam = math.exp(lo + k * h)
        exact = gp_posterior(gr.choices, gr.y, lam, lengths=gr.lengths, grad=True, options=gr.options)
        interp = gp_interpolated(tab, lo, h, lam, lengths=gr.lengths)
        for a, b in zip(exact, interp):
            np.testing.assert_allclose(b[used], a[used], rtol=1e-9, atol=1e-12)


def test_close_to_the_exact_posterior_between_the_nodes(participant, table):
    """The cubic Hermite interpolant's error at the default step, over the lambdas people have (0.3 .. 3)."""
    gr = participant
    tab, lo, h = table
    used = _used(gr)
    for u in np.linspace(math.log(0.3), math.log(3.0), 23) + 0.37 * h:
        lam = math.exp(u)
        mu, var, _, _ = gp_posterior(gr.choices, gr.y, lam, lengths=gr.lengths, options=gr.options)
        imu, ivar, _, _ = gp_interpolated(tab, lo, h, lam, lengths=gr.lengths)
        assert np.abs(imu - mu)[used].max() < 1e-4
        assert np.abs(ivar - var)[used].max() < 1e-4


def test_outside_the_nodes_only_the_table_is_refused(table):
    tab, lo, h = table
    with pytest.raises(ValueError, match="outside the table"):
        gp_interpolated(tab, lo, h, math.exp(lo - 0.1))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_sampled_density_has_its_own_gradient(participant, family):
    """NUTS needs the gradient of what it evaluates: the interpolated density's gradient against its own central
    differences (off the nodes), and the exact density outside them."""
    model = GridSearchModel(participant)
    d = model.density(family)
    sb = d.sampling_buffer()
    assert len(sb) > len(d.buf)
    x = np.array([0.013, -1.1, -2.9]) if family == "UCB" else np.array([0.013, -2.9])
    v, g = log_density_grad(sb, x)
    eps = 1e-5
    for j in range(len(x)):
        e = np.zeros(len(x))
        e[j] = eps
        fd = (log_density(sb, x + e)[0] - log_density(sb, x - e)[0]) / (2 * eps)
        assert fd == pytest.approx(g[j], rel=1e-5, abs=1e-5)
    assert abs(v - log_density_grad(d.buf, x)[0]) < 1e-3
    far = x.copy()
    far[0] = 3.5  # beyond the nodes (prior centre + 3 sd): the exact density
    assert log_density_grad(sb, far)[0] == log_density_grad(d.buf, far)[0]


def test_sampling_error_is_measured_only_where_a_table_is_used(participant):
    gr = participant
    rng = np.random.default_rng(0)
    X = rng.normal([0.0, -1.2, -3.0], 0.2, size=(1000, 3))
    gp = GridSearchModel(gr).density("UCB")
    err = gp.sampling_error(X)
    assert 0 < err < SAMPLING_TOLERANCE
    assert GridSearchModel(gr, GridSearchConfig(gp_table=False)).density("UCB").sampling_error(X) == 0.0
    assert GridSearchModel(gr, GridSearchConfig(surrogate="BMT")).density("UCB").sampling_error(X) == 0.0


def test_a_table_too_large_is_not_built(monkeypatch, participant):
    from ibo_pymc.tasks.gridsearch import surrogate

    monkeypatch.setattr(surrogate, "GP_TABLE_MAX_BYTES", 1000)
    gr = participant
    assert surrogate.gp_table(gr.choices, gr.y, -3.0, 0.05, 121, lengths=gr.lengths, options=gr.options) is None


def test_the_table_on_a_line_with_rounds_of_two_lengths():
    """Wu et al. 2018's horizons: padded rounds; the line's option set."""
    from ibo_pymc.tasks.gridsearch.data import PAD, GridRounds

    rng = np.random.default_rng(5)
    opts = OptionSet.grid(30)
    choices = rng.integers(0, 30, size=(3, 11))
    choices[1, 6:] = PAD
    z = rng.uniform(0, 100, size=(3, 11))
    z[1, 6:] = np.nan
    gr = GridRounds(1, "1d", np.arange(3), choices, z, options=opts, lengths=np.array([11, 6, 11]))
    lo, h, K = gp_table_nodes(0.0, 1.0)
    tab = gp_table(gr.choices, gr.y, lo, h, K, lengths=gr.lengths, options=opts)
    used = _used(gr)
    lam = math.exp(lo + 40.5 * h)
    mu, var, _, _ = gp_posterior(gr.choices, np.nan_to_num(gr.y), lam, lengths=gr.lengths, options=opts)
    imu, ivar, _, _ = gp_interpolated(tab, lo, h, lam, lengths=gr.lengths)
    assert np.abs(imu - mu)[used].max() < 1e-4 and np.abs(ivar - var)[used].max() < 1e-4


class _Normal(Density):
    """A standard normal whose 'approximation' NUTS is given is a normal shifted by ``shift``."""

    names = ("a", "b")

    def __init__(self, shift):
        self.shift = shift

    def value_and_grad(self, x, shift=0.0):
        z = np.asarray(x, float) - shift
        return float(-0.5 * z @ z), -z

    def nutpie_model(self, initial_point, *, exact=False):
        if exact:
            return pyfunc_nutpie_model(self, initial_point)
        approx = _Normal(0.0)
        approx.value_and_grad = lambda x: self.value_and_grad(x, self.shift)
        return pyfunc_nutpie_model(approx, initial_point)

    def sampling_error(self, points):
        diff = [self.value_and_grad(p, self.shift)[0] - self.value_and_grad(p)[0] for p in np.asarray(points)]
        return float(np.abs(diff).max())


@pytest.mark.parametrize("shift", [0.0, 1.0])
def test_an_approximation_beyond_the_tolerance_is_sampled_again_exactly(shift):
    config = EngineConfig(draws=300, tune=200, chains=2, cores=1)
    X, stats = sample_family(_Normal(shift), np.zeros(2), config, seed=1)
    assert stats.attrs["sampling_error"] == 0.0  # exact: the shifted one failed, or there was no difference
    assert np.abs(X.reshape(-1, 2).mean(0)).max() < 0.3  # the standard normal's draws, not the shifted one's


def test_setting_and_hash():
    old = GridSearchConfig(gp_table=False).to_dict()
    assert "gp_table" not in old  # GP fits sampled exactly keep the hash they had before the table
    assert GridSearchConfig.from_dict(old).gp_table is False
    assert GridSearchConfig().key() != GridSearchConfig(gp_table=False).key()
    assert GridSearchConfig.from_json(GridSearchConfig().to_json()) == GridSearchConfig()
    bmt = GridSearchConfig(surrogate="BMT")
    assert "gp_table" not in bmt.to_dict() and GridSearchConfig.from_dict(bmt.to_dict()) == bmt
    with pytest.raises(InputError, match="gp_table"):
        GridSearchConfig(surrogate="BMT", gp_table=False)


def test_the_sampled_buffer_is_built_once_per_run(participant, monkeypatch):
    """The table's copy that NUTS ran on serves the error measured after the run, then is released."""
    from ibo_pymc.tasks.gridsearch import density

    d = GridSearchModel(participant).density("UCB")
    built = []
    real = density.with_table
    monkeypatch.setattr(density, "with_table", lambda *a: built.append(1) or real(*a))
    d.nutpie_model(lambda seed: np.zeros(3))
    X = np.random.default_rng(0).normal([0.0, -1.2, -3.0], 0.2, size=(50, 3))
    first = d.sampling_error(X)
    assert len(built) == 1 and d._sampled is None
    assert d.sampling_error(X) == first and len(built) == 2  # without a run before it: built afresh, same number
