"""The hierarchical model's refinement (:mod:`ibo_pymc.engine.proposal`): the t mixture, the proposal's estimate of
a subject's likelihood given the population against the exact integral, and the loop that refines a subject
whose importance weights are unreliable."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from ibo_pymc.engine import hierarchical as H
from ibo_pymc.engine.priors import UniformPrior
from ibo_pymc.engine.proposal import DF, PopulationMoments, TMixture, proposal_subject_draws


class Toy:
    """A subject's likelihood in the logit z of one U(0, 1) parameter ``x`` (family "A", no shape parameter):
    N(m; z, s), or with ``one_sided`` Phi((z - m) / s) (the data say only "z above m", so the likelihood is flat
    towards the prior's upper edge)."""

    def __init__(self, m, s, one_sided=False):
        self.m, self.s, self.one_sided = m, s, one_sided

    def loglik_z(self, z):
        return stats.norm.logcdf((z - self.m) / self.s) if self.one_sided else stats.norm.logpdf(self.m, z, self.s)

    def hierarchical_loglik(self, family, params):
        t = params["x"]
        with np.errstate(divide="ignore"):  # a draw far in the tail maps to the prior's edge
            return self.loglik_z(np.log(t) - np.log1p(-t))


def first_stage(m, s, rng, S=500, subject=1, one_sided=False):
    """The first stage of such a subject: its posterior draws under the logistic prior (the inverse CDF on a
    fine grid) and its evidence."""
    toy = Toy(m, s, one_sided)
    grid = np.linspace(-40, 40, 400_001)
    dens = np.exp(toy.loglik_z(grid)) * stats.logistic.pdf(grid)
    Z = integrate.trapezoid(dens, grid)
    cdf = np.cumsum(dens)
    draws = np.interp(rng.random(S) * cdf[-1], cdf, grid)
    z = np.stack([np.zeros(S), draws], axis=-1)[None]
    return H.SubjectDraws(
        subject, "toy", ("A",), np.array([0]), np.array([np.log(Z)]), z, ("param", "x"), toy,
        (UniformPrior(0.0, 1.0),), (None,),
    )  # fmt: skip


def _estimate(sub, mu, sigma):
    args = (
        sub.z[None],
        sub.log_base()[None],
        sub.log_evidence[None],
        np.array([[[0.0, mu]]]),
        np.array([[[1.0, sigma]]]),
        np.array([[sub.z.shape[1]]]),
    )
    return H._population_kernel(*args)[0]


def _pareto_k(sub, mu, sigma):
    import arviz as az

    lw = H._log_ratio(sub.z, sub.log_base(), np.array([0.0, mu]), np.array([1.0, sigma]), np).ravel()
    return float(az.psislw(lw - lw.max())[1])


def test_t_mixture_density_and_draws():
    mix = TMixture([0.3, 0.7], [np.array([-1.0]), np.array([2.0])], [np.eye(1) * 0.25, np.eye(1) * 4.0])
    x = np.linspace(-5, 5, 7)
    ref = np.log(0.3 * stats.t.pdf(x, DF, -1.0, 0.5) + 0.7 * stats.t.pdf(x, DF, 2.0, 2.0))
    np.testing.assert_allclose(mix.logpdf(x), ref, rtol=1e-10)
    assert integrate.quad(lambda t: np.exp(mix.logpdf(np.array([t])))[0], -np.inf, np.inf)[0] == pytest.approx(1.0)
    two = TMixture([1.0], [np.zeros(2)], [np.array([[1.0, 0.5], [0.5, 2.0]])])
    y = np.array([[0.3, -1.2], [2.0, 0.1]])
    np.testing.assert_allclose(two.logpdf(y), stats.multivariate_t([0, 0], [[1, 0.5], [0.5, 2]], df=DF).logpdf(y))
    d = mix.draw(20_000, np.random.default_rng(1))
    expected = 0.3 * stats.t.cdf(0.5, DF, -1.0, 0.5) + 0.7 * stats.t.cdf(0.5, DF, 2.0, 2.0)
    assert d.shape == (20_000, 1) and np.mean(d < 0.5) == pytest.approx(expected, abs=0.01)
    np.testing.assert_array_equal(d, mix.draw(20_000, np.random.default_rng(1)))  # seeded


@pytest.mark.parametrize("mu, sigma", [(0.0, 3.5), (1.5, 0.5), (-1.0, 2.0)])
def test_proposal_draws_estimate_the_subjects_likelihood_given_the_population(mu, sigma):
    """The kernel over proposal draws (log evidence 0, base = log q - log-likelihood) estimates
    p(y | mu, sigma) = N(m; mu, sqrt(s^2 + sigma^2)) exactly as over the first stage's, with weights PSIS trusts."""
    m, s = 0.8, 0.6
    sub = first_stage(m, s, np.random.default_rng(0))
    moments = PopulationMoments(np.array([[0.0, mu]]), np.array([[1.0, sigma**2]]), np.zeros((1, 2)))
    prop = proposal_subject_draws(sub, moments, np.random.default_rng(1), 2000)
    assert prop.remedy == "proposal" and prop.z.shape == (1, 2000, 2) and (prop.z[..., 0] == 0).all()
    exact = stats.norm.logpdf(m, mu, np.hypot(s, sigma))
    assert _estimate(prop, mu, sigma) == pytest.approx(exact, abs=0.02)
    assert _pareto_k(prop, mu, sigma) < 0.5


def test_a_subject_with_unreliable_weights_is_refined():
    """Six sharp subjects spread far over the logit scale (a wide population, sigma about 5.6) and one whose data
    only bound its parameter from below: its posterior keeps the logistic prior's upper tail, so its first-stage
    weights N(z | population) / logistic(z) grow towards that edge (the defect). In one dimension their Pareto k
    stays near 0.35 (the hotspot's four reach 1), so the thresholds are set below it here. Its draws are replaced
    by proposal draws and the population fitted again; its final weights pass, the others' draws are untouched,
    and the run is seeded."""
    rng = np.random.default_rng(11)
    subs = [first_stage(m, 0.4, rng, subject=i + 1) for i, m in enumerate((-12.0, -8.0, -4.0, 4.0, 8.0, 12.0))]
    subs.append(first_stage(2.0, 0.5, rng, subject=7, one_sided=True))
    kw = {"draws": 300, "tune": 300, "chains": 2, "seed": 3, "cores": 1, "k_median": 0.25, "k_max": 0.4}
    lines = []
    h = H.fit_population(subs, **kw, log=lines.append)
    d = h.idata["subject_diagnostics"].to_dataframe()
    # one line per population fit: whom the first refines, then that every subject passes
    assert len(lines) == 2
    assert lines[0].startswith("population fit 1: ") and "refining the draws of subject 7 " in lines[0]
    assert lines[1].startswith("population fit 2: ") and lines[1].endswith("every subject's importance weights pass")
    one_sided, sharp = d.loc[7], d.drop(index=7)
    assert one_sided["pareto_k_first_stage"] >= 0.25 or one_sided["pareto_k_max_first_stage"] >= 0.4
    assert one_sided["remedy"] == "proposal" and one_sided["draws"] == 2000 and one_sided["refinements"] == 1
    assert one_sided["reliable"] and one_sided["pareto_k"] < 0.25 and one_sided["pareto_k_max"] < 0.4
    assert (sharp["remedy"] == "none").all() and (sharp["draws"] == 500).all() and sharp["reliable"].all()
    assert h.idata["subject_diagnostics"].attrs["population_fits"] == 2
    summary = h.weights_summary()  # what ibo-cohort hierarchical and the recovery study report
    assert (summary["refined"], summary["unreliable"], summary["population_fits"]) == (1, 0, 2)
    assert summary["max_pareto_k_first_stage"] == pytest.approx(d["pareto_k_first_stage"].max())
    assert summary["max_pareto_k_max"] == pytest.approx(d["pareto_k_max"].max())
    again = H.fit_population(subs, **kw)
    np.testing.assert_array_equal(
        again.idata["subject_posterior"]["x"].values, h.idata["subject_posterior"]["x"].values
    )
    lines.clear()
    off = H.fit_population(subs, **kw, refine=False, log=lines.append)
    assert len(lines) == 1 and lines[0].endswith("subject 7: unreliable, not refined")
    assert (off.idata["subject_diagnostics"]["remedy"] == "none").all()
    assert off.idata["subject_diagnostics"].attrs["population_fits"] == 1
    assert not off.idata["subject_diagnostics"]["reliable"].sel(subject=7)
    # without the refinement the run is the one before it existed: the same population draws as the first round
    first = h.idata["subject_diagnostics"]
    np.testing.assert_array_equal(
        off.idata["subject_diagnostics"]["pareto_k"].values, first["pareto_k_first_stage"].values
    )


def test_padded_draws_leave_the_kernel_unchanged():
    """Components with fewer draws than the array holds (counts): the same value and gradient as unpadded."""
    rng = np.random.default_rng(2)
    z = rng.normal(0, 1.5, (1, 2, 40, 2))
    base = stats.logistic.logpdf(z).sum(-1)
    a, mu, sd = np.array([[-3.0, -4.0]]), rng.normal(0, 1, (1, 2, 2)), rng.uniform(0.5, 2, (1, 2, 2))
    short = H._population_kernel(z[:, :, :25], base[:, :, :25], a, mu, sd, np.full((1, 2), 25))
    padded = H._population_kernel(z, base, a, mu, sd, np.full((1, 2), 25))
    for x, y in zip(short, padded):
        np.testing.assert_allclose(x, y, rtol=1e-13)
    assert H._population_kernel(z, base, a, mu, sd, np.full((1, 2), 40))[0] != pytest.approx(short[0])


def test_an_adapted_proposal_centres_on_the_shrunken_moments():
    """A second refinement's proposal: the shrunk part from the refined draws' averaged weights (weighted mean and
    covariance, families with too few effective draws left out), and it still estimates the exact integral."""
    from ibo_pymc.engine.proposal import family_proposal, shrunken_moments

    m, s, mu, sigma = 0.8, 0.6, 1.5, 0.5
    sub = first_stage(m, s, np.random.default_rng(0))
    moments = PopulationMoments(np.array([[0.0, mu]]), np.array([[1.0, sigma**2]]), np.zeros((1, 2)))
    prop = proposal_subject_draws(sub, moments, np.random.default_rng(1), 4000)
    lw = H._log_ratio(prop.z, prop.log_base(), np.array([0.0, mu]), np.array([1.0, sigma]), np)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    got = shrunken_moments(prop, w)
    x = prop.z[0, :, 1]
    mean = np.average(x, weights=w[0])
    np.testing.assert_allclose(got[0][0], [mean])
    np.testing.assert_allclose(got[0][1], [[np.average((x - mean) ** 2, weights=w[0]) + 1e-8]])
    # the exact shrunken posterior: N(m; z, s) x N(z; mu, sigma) is normal
    prec = 1 / s**2 + 1 / sigma**2
    assert got[0][0][0] == pytest.approx((m / s**2 + mu / sigma**2) / prec, abs=0.03)
    assert got[0][1][0, 0] == pytest.approx(1 / prec, rel=0.1)
    one = np.zeros_like(w)
    one[0, 0] = 1.0
    assert shrunken_moments(prop, one) == {}  # one effective draw: left out
    q = family_proposal(sub, 0, moments, shrunk=got[0])
    assert len(q.parts) == 3 and q.parts[0].loc[0] == pytest.approx(got[0][0][0])
    adapted = proposal_subject_draws(sub, moments, np.random.default_rng(2), 2000, shrunk=got)
    exact = stats.norm.logpdf(m, mu, np.hypot(s, sigma))
    assert _estimate(adapted, mu, sigma) == pytest.approx(exact, abs=0.02)
    assert _pareto_k(adapted, mu, sigma) < 0.5


def test_a_subject_first_flagged_late_is_refined_too(monkeypatch):
    """``max_rounds`` counts one subject's refinements, not population fits: a subject whose weights first fail
    on the last fit the old rule allowed (subject 2 here, on the second fit with ``max_rounds=1``) is refined
    and the population fitted again; a subject refined ``max_rounds`` times is not refined again and is reported
    unreliable. The population sampler and the subjects' weights are scripted (Pareto k per fit), the loop real."""
    import arviz as az
    import xarray as xr

    rng = np.random.default_rng(0)
    subs = [first_stage(m, 0.5, rng, subject=i + 1) for i, m in enumerate((-1.0, 0.0, 1.0))]
    script = iter([(0.9, 0.2, 0.2), (0.9, 0.9, 0.2), (0.2, 0.2, 0.2)])  # median k per subject, fit by fit
    refined_draws = []

    def sample(current, *a):
        return az.from_dict(posterior={"mu": np.zeros((1, 4, 1))})

    def weights(idata, current, rng):
        k = np.array(next(script))
        diag = xr.Dataset({"pareto_k": ("subject", k), "pareto_k_max": ("subject", k)},
                          coords={"subject": [s.subject for s in current]})  # fmt: skip
        return {"subject_diagnostics": diag}, [None] * len(current)

    def propose(sub, moments, rng, n, shrunk=None):
        refined_draws.append((sub.subject, n))
        return sub

    monkeypatch.setattr(H, "_sample_population", sample)
    monkeypatch.setattr(H, "_subject_posterior", weights)
    monkeypatch.setattr(H, "population_moments", lambda *a: None)
    monkeypatch.setattr(H, "shrunken_moments", lambda *a: None)
    monkeypatch.setattr(H, "proposal_subject_draws", propose)
    monkeypatch.setattr(H, "_add_natural_scale", lambda *a: None)
    lines = []
    h = H.fit_population(subs, max_rounds=1, log=lines.append)
    d = h.idata["subject_diagnostics"]
    # fit 1 refines subject 1; fit 2 flags 1 (spent) and 2 (first time: refined); fit 3 passes
    assert refined_draws == [(1, 2000), (2, 2000)]
    assert "refining the draws of subject 2 " in lines[1] and lines[1].endswith(
        "subject 1: importance weights still unreliable"
    )
    assert lines[2].endswith("every subject's importance weights pass")
    assert d.attrs["population_fits"] == 3 and list(d["refinements"].values) == [1, 1, 0]
    assert d["reliable"].values.all()
