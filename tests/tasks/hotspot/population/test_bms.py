"""Random-effects BMS against answers known in closed form, a brute-force evidence and the reference algorithm."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special

from ibo_pymc.population.bms import (
    exceedance_probabilities,
    family_bms,
    random_effects_bms,
)


def test_decisive_subjects_count_exactly():
    """Each subject's evidence decides its model: g is one-hot, so alpha = 1 + the counts, and with two models
    xp = P(Beta(11, 1) > 1/2) = 1 - 2^-11."""
    lme = np.zeros((10, 2))
    lme[:, 1] = -1000.0
    r = random_effects_bms(lme)
    np.testing.assert_allclose(r.alpha, [11.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(r.expected_frequency, [11 / 12, 1 / 12])
    assert r.exceedance_probability[0] == pytest.approx(1 - 0.5**11, abs=1e-14)
    lme3 = np.full((9, 3), -1000.0)
    lme3[np.arange(9), [0, 0, 0, 0, 1, 1, 2, 0, 1]] = 0.0
    np.testing.assert_allclose(random_effects_bms(lme3).alpha, [6.0, 4.0, 2.0], atol=1e-12)


def test_indistinguishable_models_split_evenly():
    lme = np.tile([[-50.0, -50.0, -50.0]], (12, 1)) + np.arange(12)[:, None]
    r = random_effects_bms(lme)
    np.testing.assert_allclose(r.alpha, 1 + 12 / 3, atol=1e-9)
    np.testing.assert_allclose(r.exceedance_probability, 1 / 3, atol=1e-9)
    np.testing.assert_allclose(r.protected_exceedance_probability, 1 / 3, atol=1e-9)
    assert r.null_free_energy == pytest.approx(lme[:, 0].sum())  # H0: every subject's evidence, any model
    assert r.bor > 0.5  # nothing to tell the models apart: the null is the better explanation


def _exact_log_evidence_h1(lme):
    """log p(y | H1) for two models and alpha0 = (1, 1): the integral over r of prod_n (r e^l1 + (1 - r) e^l2)."""
    m = lme.max(axis=1)
    e = np.exp(lme - m[:, None])
    val, _ = integrate.quad(
        lambda r: np.exp(np.log(r * e[:, 0] + (1 - r) * e[:, 1]).sum()), 0, 1, epsabs=0, epsrel=1e-12, limit=200
    )
    return float(np.log(val) + m.sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("spread,gap", [(1.0, 1.0), (6.0, 0.25)])
def test_free_energy_is_a_lower_bound(seed, spread, gap):
    """F1 (the variational free energy) never exceeds the exact log evidence of the random-effects model. The
    mean-field gap is a few tenths of a nat, smaller the more decisive the subjects (measured: 0.5-0.8 nats at
    spread 1, 0.05-0.2 at spread 6), so the BOR leans a little towards the null, as the reference's does."""
    rng = np.random.default_rng(seed)
    lme = rng.normal(0, spread, size=(20, 2))
    r = random_effects_bms(lme)
    exact = _exact_log_evidence_h1(lme)
    assert r.free_energy <= exact + 1e-9
    assert exact - r.free_energy < gap
    assert r.bor >= special.expit(r.null_free_energy - exact) - 1e-12


def test_reference_algorithm_values():
    """spm_BMS (SPM12 r7679) with spm_BMS_bor on two inputs, its stopping rule (||alpha change|| <= 1e-3) and its
    exceedance computed exactly instead of sampled. The reference values were computed outside this package by a
    separate transcription of those two MATLAB functions (no MATLAB run is published for random effects; SPM's own
    tests check only tolerances)."""
    lme = np.array([[-100, -120, -110], [-120, -100, -110], [-100, -120, -110], [-120, -100, -110]], float)
    r = random_effects_bms(lme, tol=1e-3)
    np.testing.assert_allclose(r.alpha, [2.99998, 2.99998, 1.00004], atol=1e-5)
    assert r.iterations == 2
    assert r.null_free_energy == pytest.approx(-404.3943, abs=1e-4)
    assert r.free_energy == pytest.approx(-404.4998, abs=1e-4)
    assert r.bor == pytest.approx(0.52635, abs=1e-5)
    np.testing.assert_allclose(r.exceedance_probability, [0.47376, 0.47376, 0.05247], atol=1e-5)
    np.testing.assert_allclose(r.protected_exceedance_probability, [0.39985, 0.39985, 0.20030], atol=1e-5)

    lme = np.array([[0, -1], [-0.5, 0], [0.2, -0.2], [1, 0], [2, -1]], float)
    r = random_effects_bms(lme, tol=1e-3)
    np.testing.assert_allclose(r.alpha, [5.44323, 1.55677], atol=1e-5)
    np.testing.assert_allclose(r.exceedance_probability, [0.94738, 0.05262], atol=1e-5)
    assert r.bor == pytest.approx(0.51741, abs=1e-5)
    np.testing.assert_allclose(r.protected_exceedance_probability, [0.71590, 0.28410], atol=1e-5)
    # the default tolerance converges further, to within SPM's tolerance of its answer
    assert np.linalg.norm(random_effects_bms(lme).alpha - r.alpha) < 1e-3


def test_invariances():
    rng = np.random.default_rng(4)
    lme = pd.DataFrame(rng.normal(0, 4, size=(15, 3)), columns=["a", "b", "c"])
    r = random_effects_bms(lme)
    shifted = random_effects_bms(lme + rng.normal(0, 100, size=(15, 1)))  # a constant per subject changes nothing
    np.testing.assert_allclose(shifted.alpha, r.alpha, rtol=1e-9)
    np.testing.assert_allclose(shifted.bor, r.bor, rtol=1e-6)
    perm = random_effects_bms(lme[["c", "a", "b"]])
    np.testing.assert_allclose(
        perm.table().loc[["a", "b", "c"]].to_numpy(), r.table().to_numpy(), rtol=1e-8, atol=1e-12
    )
    assert list(r.table().columns) == [
        "alpha",
        "expected_frequency",
        "exceedance_probability",
        "protected_exceedance_probability",
    ]
    assert r.table().index.name == "model"
    np.testing.assert_allclose(r.posterior.sum(axis=1), 1.0)
    np.testing.assert_allclose(r.alpha, 1 + r.posterior.sum(axis=0).to_numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "alpha",
    [
        [8.2, 7.6, 7.2],
        [30, 2, 1.5, 4],
        [1, 1, 1],
        [200, 190, 5],
        [0.4, 0.9, 2.5],
        [20.9, 8.9, 1.1, 0.34],
        [0.01, 0.02, 0.03],
        [5000, 4900, 3],
    ],
)
def test_exceedance_quadrature_matches_sampling(alpha):
    xp, how = exceedance_probabilities(alpha)
    assert how.startswith("quadrature")
    assert xp.sum() == pytest.approx(1.0, abs=1e-9)
    n = 400_000
    mc, how_mc = exceedance_probabilities(alpha, method="sampling", n_samples=n, seed=3)
    assert "seed 3" in how_mc
    np.testing.assert_allclose(mc, xp, atol=4.5 * np.sqrt(0.25 / n))
    again, _ = exceedance_probabilities(alpha, method="sampling", n_samples=n, seed=3)
    np.testing.assert_array_equal(again, mc)  # seeded: the same numbers wherever it runs


@pytest.mark.parametrize("pair", [(5.3, 2.1), (5000, 4900), (1e5 + 300, 1e5), (0.05, 0.3)])
def test_two_models_exact_and_quadrature_agree(pair):
    """The Beta tail for two models against the quadrature with a third category that can never win."""
    xp2, how = exceedance_probabilities(list(pair))
    assert how.startswith("exact")
    xp3, _ = exceedance_probabilities([*pair, 1e-9])
    np.testing.assert_allclose(xp3[:2], xp2, atol=1e-6)


def test_families():
    rng = np.random.default_rng(7)
    lme = pd.DataFrame(rng.normal(0, 3, size=(18, 4)), columns=["a1", "a2", "b1", "b2"])
    fam = family_bms(lme, {"A": ["a1", "a2"], "B": ["b1", "b2"]})
    np.testing.assert_allclose(fam.alpha0, [1.0, 1.0])  # one prior count per family (F-unity)
    np.testing.assert_allclose(fam.models.alpha0, [0.5, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(fam.alpha, [fam.models.alpha[:2].sum(), fam.models.alpha[2:].sum()])
    np.testing.assert_allclose(fam.posterior.sum(axis=1), 1.0)
    # H0 of a family comparison: families at 1/2, models at 1/4 within them
    assert fam.null_free_energy == pytest.approx(special.logsumexp(lme.to_numpy() + np.log(0.25), axis=1).sum())
    # singletons: the family comparison is the model comparison
    single = family_bms(lme, {c: [c] for c in lme.columns})
    plain = random_effects_bms(lme)
    np.testing.assert_allclose(single.alpha, plain.alpha, rtol=1e-10)
    assert single.bor == pytest.approx(plain.bor)
    # a family that wins decisively in every subject
    strong = lme.copy()
    strong[["b1", "b2"]] -= 50
    assert family_bms(strong, {"A": ["a1", "a2"], "B": ["b1", "b2"]}).exceedance_probability[0] > 0.9999


def test_protection_under_a_family_prior_of_unequal_sizes():
    """Under the null of a family comparison the models' frequencies are unequal (1/2 for a family of one,
    1/4 each in a family of two): the model-level pxp protects towards the model the null makes most frequent."""
    rng = np.random.default_rng(3)
    lme = pd.DataFrame(rng.normal(0, 0.3, size=(6, 3)), columns=["a", "b1", "b2"])
    fam = family_bms(lme, {"A": ["a"], "B": ["b1", "b2"]})
    m = fam.models
    np.testing.assert_allclose(
        m.protected_exceedance_probability, (1 - m.bor) * m.exceedance_probability + m.bor * np.array([1, 0, 0])
    )
    assert m.protected_exceedance_probability.sum() == pytest.approx(1)
    np.testing.assert_allclose(
        fam.protected_exceedance_probability, (1 - fam.bor) * fam.exceedance_probability + fam.bor / 2
    )
    with pytest.raises(ValueError, match="alpha0"):
        family_bms(lme, {"A": ["a"], "B": ["b1", "b2"]}, alpha0=[1, 1, 1])


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"A": ["a1", "a1", "a2"], "B": ["b1", "b2"]}, "lists a model twice"),
        ({"A": ["a1", "a2"], "B": ["b1"]}, "in no family"),
        ({"A": ["a1", "a2"], "B": ["b1", "b2", "a1"]}, "in two families"),
        ({"A": ["a1", "a2", "b1", "b2"]}, "at least two families"),
        ({"A": ["a1", "a2", "b1"], "B": ["b2", "zz"]}, "not one of the models"),
    ],
)
def test_bad_partitions(bad, match):
    lme = pd.DataFrame(np.zeros((3, 4)), columns=["a1", "a2", "b1", "b2"])
    with pytest.raises(ValueError, match=match):
        family_bms(lme, bad)


def test_bad_tables():
    with pytest.raises(ValueError, match="two models"):
        random_effects_bms(np.zeros((4, 1)))
    with pytest.raises(ValueError, match="finite"):
        random_effects_bms(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="alpha0"):
        random_effects_bms(np.zeros((4, 2)), alpha0=[1.0, -1.0])
    with pytest.raises(ValueError, match="each subject must appear once"):
        random_effects_bms(pd.DataFrame(np.zeros((3, 2)), index=[1, 2, 1], columns=["a", "b"]))
