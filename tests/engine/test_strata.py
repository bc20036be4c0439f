"""Strata for every task: a family whose chains show separated modes is split by the engine's per-family plan,
each stratum sampled under its restricted prior, and merged back into the family; the restricted density and
the prior shares are exact; a fit that used none of its convergence budget is the fit of a larger budget."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr
from scipy import integrate, stats

import ibo_pymc as ibo
from ibo_pymc.engine.density import Density
from ibo_pymc.engine.model import budget_used
from ibo_pymc.engine.strata import RestrictedDensity, Stratum

#: family A's log-likelihood in log x: two modes (weights 0.7 at -1.5, 0.3 at +1.5, sd 0.5) with a valley that
#: NUTS crosses rarely; family B's: one mode. Both: log y ~ N(0.5, 0.3) in the likelihood.
MODES = {"A": ((0.7, -1.5, 0.5), (0.3, 1.5, 0.5)), "B": ((1.0, 0.5, 0.4),)}
PRIORS = {"x": (0.0, 2.0), "y": (0.0, 1.0)}


def _loglik_x(family, zx):
    zx = np.asarray(zx, float)
    terms = [math.log(w) + stats.norm.logpdf(zx, m, s) for w, m, s in MODES[family]]
    return np.logaddexp.reduce(terms, axis=0) if len(terms) > 1 else terms[0]


def _dloglik_x(family, zx):
    terms = np.array([math.log(w) + stats.norm.logpdf(zx, m, s) for w, m, s in MODES[family]])
    p = np.exp(terms - terms.max())
    p /= p.sum()
    return float(sum(pk * -(zx - m) / s**2 for pk, (_, m, s) in zip(p, MODES[family])))


class TwoModes(Density):
    names = ("x", "y")

    def __init__(self, family):
        self.family = family

    def value(self, z):
        z = np.atleast_2d(np.asarray(z, float))
        zx, zy = z[:, 0], z[:, 1]
        (mx, sx), (my, sy) = PRIORS["x"], PRIORS["y"]
        return (
            _loglik_x(self.family, zx)
            + stats.norm.logpdf(zy, 0.5, 0.3)
            + stats.norm.logpdf(zx, mx, sx)
            + stats.norm.logpdf(zy, my, sy)
        )

    def value_and_grad(self, z):
        zx, zy = float(z[0]), float(z[1])
        (mx, sx), (my, sy) = PRIORS["x"], PRIORS["y"]
        v = (
            float(_loglik_x(self.family, zx))
            + stats.norm.logpdf(zy, 0.5, 0.3)
            + stats.norm.logpdf(zx, mx, sx)
            + stats.norm.logpdf(zy, my, sy)
        )
        g = np.array([_dloglik_x(self.family, zx) - (zx - mx) / sx**2, -(zy - 0.5) / 0.09 - (zy - my) / sy**2], float)
        return v, g


@pytest.fixture(scope="module")
def model_class():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Config(ibo.EngineConfig):
        families: tuple = ("A", "B")
        draws: int = 500
        tune: int = 300
        cores: int = 1
        max_thin: int = 1

    class Model(ibo.IBOModelBase):
        task, observed, config_class = "twomodes", "units", Config

        def priors(self, family):
            return {n: ibo.LogNormalPrior(*PRIORS[n]) for n in ("x", "y")}

        def density(self, family):
            return TwoModes(family)

        def loglik(self, family, params):
            zx, zy = np.log(np.asarray(params["x"], float)), np.log(np.asarray(params["y"], float))
            return np.stack([_loglik_x(family, zx), stats.norm.logpdf(zy, 0.5, 0.3)], axis=-1)

        def unit_coords(self):
            return "unit", [0, 1]

        def select_units(self, keep):
            return self.obs

        def data_groups(self):
            return {"observed_data": xr.Dataset({"units": ("unit", np.arange(2.0))})}

        def fit_attrs(self):
            return {"subject": 1, "model": "two modes"}

        @classmethod
        def from_fit(cls, idata):
            return "two modes"

    return Model


def _evidence(family):
    """log of the integral of the likelihood times the prior, by quadrature."""
    (mx, sx), (my, sy) = PRIORS["x"], PRIORS["y"]
    zx = integrate.quad(
        lambda z: math.exp(_loglik_x(family, z) + stats.norm.logpdf(z, mx, sx)), -12, 12, points=[-1.5, 1.5]
    )[0]
    zy = integrate.quad(lambda z: stats.norm.pdf(z, 0.5, 0.3) * stats.norm.pdf(z, my, sy), -8, 8)[0]
    return math.log(zx) + math.log(zy)


@pytest.mark.parametrize("a, b", [(-math.inf, 0.3), (0.3, math.inf), (-1.0, 2.5), (5.0, 9.0), (-9.0, -6.0)])
def test_a_log_normal_prior_share_of_an_interval(a, b):
    prior = ibo.LogNormalPrior(0.0, 2.0)
    exact = stats.norm(0.0, 2.0).cdf(b) - stats.norm(0.0, 2.0).cdf(a)
    far = stats.norm(0.0, 2.0).sf(a) - stats.norm(0.0, 2.0).sf(b) if a > 0 else exact
    assert prior.log_mass_unconstrained(a, b) == pytest.approx(math.log(far if a > 0 else exact), rel=1e-10)


def test_the_priors_shares_keep_their_digits_in_the_far_tails():
    sd = 2.0
    prior = ibo.LogNormalPrior(0.0, sd)
    lo, hi = stats.norm.logsf(20 / sd), stats.norm.logsf(25 / sd)
    assert prior.log_mass_unconstrained(20.0, 25.0) == pytest.approx(lo + math.log1p(-math.exp(hi - lo)), rel=1e-12)
    assert prior.log_mass_unconstrained(-25.0, -20.0) == pytest.approx(lo + math.log1p(-math.exp(hi - lo)), rel=1e-12)
    u = ibo.UniformPrior(0.0, 4.0)  # on the logit scale: the share of (a, b) is sigmoid(b) - sigmoid(a)
    assert u.log_mass_unconstrained(-math.inf, 0.0) == pytest.approx(math.log(0.5))
    assert u.log_mass_unconstrained(-1.0, 2.5) == pytest.approx(math.log(1 / (1 + math.exp(-2.5)) - 1 / (1 + math.e)))
    assert u.log_mass_unconstrained(37.0, math.inf) == pytest.approx(-37.0, rel=1e-12)
    assert u.log_mass_unconstrained(-math.inf, -800.0) == pytest.approx(-800.0)
    assert u.log_mass_unconstrained(40.0, 41.0) == pytest.approx(-40.0 + math.log1p(-math.exp(-1.0)), rel=1e-9)


@pytest.mark.parametrize(
    "limits", [(("x", -math.inf, 0.2),), (("x", 0.2, math.inf),), (("x", -1.0, 0.2), ("y", 0.0, 2.0))]
)
def test_a_restricted_density_is_the_renormalised_density_on_its_own_scale(model_class, limits):
    m = model_class("two modes")
    d = RestrictedDensity(m.density("A"), m.priors("A"), Stratum("A", limits))
    w = np.array([0.3, -0.4])
    v, g = d.value_and_grad(w)
    num = [(d.value_and_grad(w + e)[0] - d.value_and_grad(w - e)[0]) / 2e-6 for e in np.eye(2) * 1e-6]
    assert g == pytest.approx(num, rel=1e-5, abs=1e-6)
    assert d.value(w[None])[0] == pytest.approx(v)
    assert d.from_base(d.to_base(w)) == pytest.approx(w)
    # the density integrates (over w) to the evidence of the stratum under its restricted, renormalised prior:
    # with its log share, the part of the family's evidence inside its box
    ww = np.linspace(-14, 14, 801)
    W = np.stack(np.meshgrid(ww, ww, indexing="ij"), axis=-1).reshape(-1, 2)
    inside = np.exp(d.value(W) + d.log_share).sum() * (ww[1] - ww[0]) ** 2
    z = d.to_base(W)
    lo = np.array([d.stratum.interval(n)[0] for n in ("x", "y")])
    hi = np.array([d.stratum.interval(n)[1] for n in ("x", "y")])
    assert ((z > lo) & (z < hi)).all()
    # the same integral on the family's scale, by the midpoint rule inside the box (cut at +-12)
    edges = [np.linspace(max(a, -12.0), min(b, 12.0), 1601) for a, b in zip(lo, hi)]
    mids = [0.5 * (e[1:] + e[:-1]) for e in edges]
    Z = np.stack(np.meshgrid(*mids, indexing="ij"), axis=-1).reshape(-1, 2)
    direct = np.exp(m.density("A").value(Z)).sum() * np.prod([e[1] - e[0] for e in edges])
    assert inside == pytest.approx(direct, rel=2e-3)


def test_a_multimodal_family_is_split_sampled_and_merged(model_class, tmp_path):
    unsplit = model_class("two modes")
    unsplit.fit()
    assert not unsplit.converged() and unsplit.failing() == ["A"]  # the chains disagree about the modes

    m = model_class("two modes", max_strata=2, max_thin=4)  # a stratum may still need a longer run
    m.fit()
    assert m.converged(), m.diagnostics()
    idata = m.idata
    comps = json.loads(idata.posterior.attrs["components"])
    strata = comps[0]["strata"]
    assert [c["family"] for c in comps] == ["A", "B"] and "strata" not in comps[1]
    assert [s["label"] for s in strata] == ["A[1/2]", "A[2/2]"]
    assert list(idata.sample_stats["sampled_component"].values) == ["A[1/2]", "A[2/2]", "B"]
    # the family's draws hold each stratum in proportion to its probability within the family (0.7 and 0.3)
    x = np.log(idata.conditional_posterior["x"].sel(component="A").values)
    cut = strata[0]["limits"]["x"][1]
    share = float((x < cut).mean())
    assert share == pytest.approx(strata[0]["probability_in_family"], abs=1.5 / x.shape[1])
    assert share == pytest.approx(0.7, abs=0.05)
    # the family's evidence is its strata's, weighted by their prior shares: the quadrature's
    ev = idata.component_evidence
    for fam in ("A", "B"):
        got = float(ev["log_evidence"].sel(component=fam))
        err = float(ev["log_evidence_rel_error"].sel(component=fam))
        assert abs(got - _evidence(fam)) < max(4 * err, 0.02), (fam, got, _evidence(fam), err)
    # both used their budget: the split one split, the unsplit one stopped short of the targets with none left
    assert budget_used(idata, m.config) and budget_used(unsplit.idata, unsplit.config)

    # a saved fit is refitted under a larger budget only when it used its budget
    path = m.save(tmp_path / "split.nc")
    with pytest.raises(ibo.InputError, match="another configuration"):
        model_class.load(path, config=m.config.replace(max_strata=3))
    b = model_class("two modes", families=("B",))
    b.fit()
    assert b.converged() and not budget_used(b.idata, b.config)
    thinned = b.idata.copy()
    thinned.component_evidence["thin"].values[:] = 2
    assert budget_used(thinned, b.config)
    path = b.save(tmp_path / "b.nc")
    bigger = b.config.replace(max_strata=3, max_thin=8)
    loaded = model_class.load(path, config=bigger)  # taken as the fit of the configuration asked for
    assert loaded.config == bigger and loaded.idata.posterior.attrs["config_hash"] == bigger.key()
    assert loaded.idata.posterior.attrs["config_saved_hash"] == b.config.key()
    again = model_class.fit_or_load("two modes", bigger, path)
    assert again.idata.posterior.attrs["config_saved_hash"] == b.config.key()  # reused, not refitted
    assert np.array_equal(again.idata.posterior["x"].values, b.idata.posterior["x"].values)
    with pytest.raises(ibo.InputError, match="another configuration"):
        model_class.load(path, config=b.config.replace(seed=3))


def test_a_saved_configuration_without_a_later_setting_reads_at_its_old_behaviour(model_class):
    # max_strata joined after fits were saved: such a file's configuration has no max_strata and means 1 (no
    # strata), whatever a task's default is today; else a fit that could not split would pass as one that could
    config = model_class.config_class(max_strata=2)
    saved = {k: v for k, v in config.to_dict().items() if k != "max_strata"}
    assert model_class.config_class.from_dict(saved).max_strata == 1
    assert model_class.config_class.from_dict(config.to_dict()).max_strata == 2
