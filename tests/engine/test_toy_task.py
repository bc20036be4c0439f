"""A third task in one file, through the public base class only: a 10-armed bandit learned by a Bayesian mean
tracker, choosing by UCB or greedily. Its fits converge, give family probabilities that find the learners'
family, LOO over rounds, a cohort BMS and a figure, through the calls the real tasks use."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr

import ibo_pymc as ibo
from tests.fit_files import assert_writes_as_xarray

ARMS, ROUNDS, TRIALS = 10, 6, 15


@dataclass(frozen=True)
class Bandit:
    subject: int
    choices: np.ndarray  # (round, trial) arm chosen
    rewards: np.ndarray  # (round, trial)

    def before(self):
        """Per choice, each arm's count and reward sum before it: (round, trial, arm) twice."""
        hot = np.eye(ARMS)[self.choices]
        n = np.cumsum(hot, axis=1) - hot
        s = np.cumsum(hot * self.rewards[..., None], axis=1) - hot * self.rewards[..., None]
        return n, s


def tracker(n, s, error_variance):
    """The mean tracker's posterior mean and variance of every arm (prior N(0, 1))."""
    var = 1.0 / (1.0 + n / error_variance)
    return var * s / error_variance, var


@dataclass(frozen=True)
class BanditConfig(ibo.EngineConfig):
    families: tuple = ("UCB", "greedy")
    draws: int = 500
    tune: int = 500
    cores: int = 1


class BanditModel(ibo.IBOModelBase):
    task, observed, config_class = "bandit", "choices", BanditConfig

    def priors(self, family):
        beta = {"beta": ibo.LogNormalPrior(0.0, 0.7)} if family == "UCB" else {}
        return {"error_variance": ibo.LogNormalPrior(0.0, 1.0), **beta, "tau": ibo.LogNormalPrior(-2.0, 1.0)}

    def density(self, family):
        if not hasattr(self, "_densities"):
            self._densities = {}
        if family not in self._densities:
            self._densities[family] = ibo.PyTensorDensity(lambda p: self._loglik(family, p), self.priors(family))
        return self._densities[family]

    def _loglik(self, family, p):
        import pytensor.tensor as pt

        n, s = self.obs.before()
        mu, var = tracker(pt.as_tensor(n), pt.as_tensor(s), p["error_variance"])
        q = (mu + p["beta"] * pt.sqrt(var) if family == "UCB" else mu) / p["tau"]
        chosen = np.eye(ARMS)[self.obs.choices]
        logp = (q * chosen).sum(-1) - pt.logsumexp(q, axis=-1)
        return logp[:, 1:].sum(-1)  # each round's choices after the first

    def loglik(self, family, params):
        return self.density(family).pointwise(params)

    def unit_coords(self):
        return "round", list(range(1, len(self.obs.choices) + 1))

    def select_units(self, keep):
        return Bandit(self.obs.subject, self.obs.choices[keep], self.obs.rewards[keep])

    def data_groups(self):
        dims = ("round", "trial")
        return {"observed_data": xr.Dataset({"choice": (dims, self.obs.choices), "reward": (dims, self.obs.rewards)})}

    def fit_attrs(self):
        return {"subject": self.obs.subject, "model": "mean tracker"}

    @classmethod
    def from_fit(cls, idata):
        o = idata.observed_data
        return Bandit(int(idata.posterior.attrs["subject"]), o["choice"].values, o["reward"].values)


def simulate(subject, family, rng, error_variance=1.0, beta=1.5, tau=0.1) -> Bandit:
    choices = np.zeros((ROUNDS, TRIALS), int)
    rewards = np.zeros((ROUNDS, TRIALS))
    for r in range(ROUNDS):
        means = rng.normal(0.0, 1.0, ARMS)
        n, s = np.zeros(ARMS), np.zeros(ARMS)
        for t in range(TRIALS):
            mu, var = tracker(n, s, error_variance)
            q = (mu + beta * np.sqrt(var) if family == "UCB" else mu) / tau
            a = rng.choice(ARMS, p=np.exp(q - q.max()) / np.exp(q - q.max()).sum())
            choices[r, t], rewards[r, t] = a, rng.normal(means[a], 0.5)
            n[a] += 1
            s[a] += rewards[r, t]
    return Bandit(subject, choices, rewards)


@pytest.fixture(scope="module")
def cohort():
    rng = np.random.default_rng(3)
    truth = {1: "UCB", 2: "UCB", 3: "UCB", 4: "greedy"}
    models = [BanditModel(simulate(s, f, rng)) for s, f in truth.items()]
    for m in models:
        m.fit()
    return truth, models


def test_fits_converge_and_find_the_family(cohort):
    truth, models = cohort
    for m in models:
        assert m.converged(), m.diagnostics()
        probs = m.family_probabilities()
        assert probs.sum() == pytest.approx(1.0) and probs[truth[m.obs.subject]] > 0.5, (m.obs.subject, probs)
        summ = m.summary()
        assert set(summ["family"]) == {"UCB", "greedy", "marginal"} and (summ["hdi_lower"] < summ["hdi_upper"]).all()


def test_loo_bms_plot_and_the_saved_fit(cohort, tmp_path):
    truth, models = cohort
    loo = models[0].loo()  # the three tiers: per-family PSIS, moment matching, exact refits
    assert loo.n_data_points == ROUNDS and np.isfinite(loo.elpd_loo) and (loo.pareto_k.values <= 0.7).all()
    assert isinstance(loo["n_refit"], int)
    bms = ibo.random_effects_bms(ibo.family_lme(models))
    assert bms.names[int(np.argmax(bms.expected_frequency))] == "UCB"
    fig = models[3].plot()
    fig.savefig(tmp_path / "fit.png")
    assert (tmp_path / "fit.png").stat().st_size > 1000
    path = models[3].save(tmp_path / "fit.nc")
    assert_writes_as_xarray(models[3].idata, tmp_path)  # the writer against xarray's own (tests/fit_files.py)
    back = BanditModel.load(path, config=models[3].config)
    assert back.family_probabilities().equals(models[3].family_probabilities())
    assert ibo.read_fit(path).posterior.attrs["task"] == "bandit"
    with pytest.raises(ibo.InputError, match="another configuration"):
        BanditModel.load(path, config=BanditConfig(seed=1))
    # the population of the four, without the refinement (its rounds refit the population up to three times more:
    # two minutes here; tests/engine/test_proposal.py covers it)
    h = ibo.fit_hierarchical(models, draws=200, tune=200, chains=2, cores=1, n_draws=200, refine=False)
    assert set(h.population()["quantity"]) >= {"family_frequency", "median", "median_shape"}
