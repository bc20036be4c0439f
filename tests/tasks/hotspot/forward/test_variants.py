"""One definition of the model variants and the shared priors."""

from __future__ import annotations

import numpy as np
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.forward.variants import (
    MODELS,
    PRIORS,
    get_variant,
    log_density_unconstrained,
    tau_names,
)


def test_variants_map_their_taus_to_both_halves():
    g = np.array([0.2, 0.3])
    tn, tp = get_variant("u").tau_pair({"gamma": g})
    assert np.array_equal(tn, [0, 0]) and np.array_equal(tp, [0, 0])
    tn, tp = get_variant("tau").tau_pair({"tau": g})
    assert tn is g and tp is g
    tn, tp = get_variant("tau_pm").tau_pair({"tau_neg": 1.0, "tau_pos": 2.0})
    assert (tn, tp) == (1.0, 2.0)
    assert MODELS == ("u", "tau", "tau_pm")
    assert [tau_names(m) for m in MODELS] == [(), ("tau",), ("tau_neg", "tau_pos")]
    assert [get_variant(m).split_by_sign for m in MODELS] == [False, False, True]
    assert [get_variant(m).label for m in MODELS] == ["u", "ũ", "ũ±"]


def test_unknown_variant_is_a_one_line_input_error():
    with pytest.raises(InputError, match="unknown model 'tau2'; expected one of u, tau, tau_pm"):
        get_variant("tau2")


@pytest.mark.parametrize("name", sorted(PRIORS))
def test_prior_logit_map_and_its_density(name):
    prior = PRIORS[name]
    lo, hi = prior.bounds
    v = np.linspace(lo, hi, 9)[1:-1]
    np.testing.assert_allclose(prior.from_unconstrained(prior.to_unconstrained(v)), v, rtol=1e-12)
    # the density of z = logit(v) under v ~ U(lo, hi) is |dv/dz| / (hi - lo) = sigmoid(z) sigmoid(-z)
    z = np.linspace(-6, 6, 13)
    h = 1e-6
    dv = (prior.from_unconstrained(z + h) - prior.from_unconstrained(z - h)) / (2 * h)
    np.testing.assert_allclose(np.exp(log_density_unconstrained(z)), dv / (hi - lo), rtol=1e-6)


def test_model_spec_holds_every_parameter_and_its_prior_object():
    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
    from ibo_pymc.tasks.hotspot.forward.priors import UniformPrior
    from ibo_pymc.tasks.hotspot.forward.variants import ModelSpec

    spec = ModelSpec("tau_pm")
    assert spec.parameters == ("xi_pi", "xi_ei", "p_ucb", "gamma", "w", "tau_neg", "tau_pos")
    assert ModelSpec("u").parameters[-2:] == ("gamma", "w") and ModelSpec("tau").shared == ("gamma", "w", "tau")
    for f in ("PI", "EI", "UCB"):
        assert spec.prior(get_family(f).var_name) == get_family(f).prior == UniformPrior(*get_family(f).bounds)
    assert spec.prior("gamma") is PRIORS["gamma"]
    with pytest.raises(KeyError, match="no parameter 'tau'"):
        spec.prior("tau")
    rng = np.random.default_rng(0)
    for name, prior in spec.priors().items():
        x = prior.draw(rng, 1000)
        lo, hi = prior.bounds
        assert x.min() >= lo and x.max() <= hi and abs(x.mean() - (lo + hi) / 2) < 0.05 * (hi - lo), name
        np.testing.assert_allclose(prior.logpdf(x), -np.log(hi - lo))
        assert prior.logpdf(hi + 1.0) == -np.inf
    with pytest.raises(ValueError, match="lo < hi"):
        UniformPrior(1.0, 1.0)
    assert UniformPrior(0.0, 1.0).restrict(0.2, 3.0) == UniformPrior(0.2, 1.0)


def test_prior_object_declares_the_pymc_variable():
    import pymc as pm

    with pm.Model() as m:
        PRIORS["gamma"].pymc("gamma")
    lo, hi = PRIORS["gamma"].bounds
    # the logp at the interval's midpoint (value space), as PyMC's Uniform has it
    assert float(m.compile_logp(jacobian=False)({"gamma_interval__": 0.0})) == pytest.approx(-np.log(hi - lo))
