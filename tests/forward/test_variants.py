"""One definition of the model variants and the shared priors."""

from __future__ import annotations

import numpy as np
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.forward.variants import (
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
