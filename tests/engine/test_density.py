"""The engine's density adapters and priors: a PyTensor log-likelihood gives the value and gradient of the
unconstrained density; the PyTensor Op of any density carries both into a PyMC model; the priors' maps and
densities are consistent; the configuration refuses bad values in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import ibo_pymc as ibo
from ibo_pymc.engine.density import Density


@pytest.fixture(scope="module")
def normal_model():
    """y ~ Normal(mu, sigma) with sigma ~ LogNormal(0, 1), mu ~ Uniform(-3, 3): a density with both maps."""
    y = np.array([0.3, -0.2, 1.1, 0.7])
    priors = {"mu": ibo.UniformPrior(-3.0, 3.0), "sigma": ibo.LogNormalPrior(0.0, 1.0)}

    def loglik(p):
        import pytensor.tensor as pt

        return -0.5 * ((pt.as_tensor(y) - p["mu"]) / p["sigma"]) ** 2 - pt.log(p["sigma"]) - 0.5 * math.log(2 * math.pi)

    return y, priors, ibo.PyTensorDensity(loglik, priors)


def test_pytensor_density_value_and_gradient(normal_model):
    y, priors, dens = normal_model
    z = np.array([0.4, -0.3])
    mu, sigma = priors["mu"].from_unconstrained(z[0]), priors["sigma"].from_unconstrained(z[1])
    expected = (
        stats.norm.logpdf(y, mu, sigma).sum()
        + priors["mu"].log_density_unconstrained(z[0])
        + priors["sigma"].log_density_unconstrained(z[1])
    )
    v, g = dens.value_and_grad(z)
    assert v == pytest.approx(expected, rel=1e-12)
    h = 1e-6
    fd = [(dens.value_and_grad(z + h * e)[0] - dens.value_and_grad(z - h * e)[0]) / (2 * h) for e in np.eye(2)]
    assert np.allclose(g, fd, atol=1e-6)
    assert np.allclose(dens.value(np.stack([z, z + 0.1])), [v, dens.value_and_grad(z + 0.1)[0]])
    pw = dens.pointwise({"mu": np.array([mu]), "sigma": np.array([sigma])})
    assert pw.shape == (1, 4) and np.allclose(pw[0], stats.norm.logpdf(y, mu, sigma))


def test_the_density_op_carries_value_and_gradient_into_pymc(normal_model):
    _, _, dens = normal_model
    m = Density.pymc_model(dens)  # the generic adapter, not a compiled callback
    logp = m.compile_logp()
    dlogp = m.compile_dlogp()
    z = np.array([0.2, 0.5])
    assert logp({"z": z}) == pytest.approx(dens.value_and_grad(z)[0])
    assert np.allclose(dlogp({"z": z}), dens.value_and_grad(z)[1])


@pytest.mark.parametrize("prior", [ibo.UniformPrior(0.5, 2.0), ibo.LogNormalPrior(-1.0, 0.5)])
def test_priors_map_and_normalise(prior):
    v = prior.draw(np.random.default_rng(0), size=1000)
    assert np.allclose(prior.from_unconstrained(prior.to_unconstrained(v)), v)
    # the density of the unconstrained variable integrates to one
    total, _ = integrate.quad(lambda z: math.exp(float(prior.log_density_unconstrained(z))), -30, 30)
    assert total == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"draws": 0}, "draws"),
        ({"sampler": "stan"}, "sampler"),
        ({"mass_matrix": "dense"}, "mass_matrix"),
        ({"seed": -1}, "seed"),
        ({"target_accept": 1.0}, "target_accept"),
    ],
)
def test_engine_config_refuses_bad_values(bad, field):
    with pytest.raises(ibo.InputError, match=f"field '{field}'"):
        ibo.EngineConfig(**bad)
    with pytest.raises(ibo.InputError, match="unknown setting"):
        ibo.EngineConfig().replace(draw=10)
    cfg = ibo.EngineConfig(seed=3)
    assert ibo.EngineConfig.from_dict(cfg.to_dict()) == cfg and cfg.key() != ibo.EngineConfig().key()
    assert cfg.replace(cores=2).key() == cfg.key()  # cores change the speed, not the draws
