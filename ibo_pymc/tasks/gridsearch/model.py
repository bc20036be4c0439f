"""Bayesian inverse BO for the grid task: the posterior of (theta, beta, tau) with the family marginalised.

The model of one participant in one context (``theta`` the surrogate's
parameter: the GP's length-scale lambda, or the mean tracker's error_variance)::

    family ~ Categorical(1/F, ..., 1/F)          over UCB, EI, PI, mean, variance
    log theta ~ Normal(m, s)   log beta ~ Normal(m, s) (UCB)   log tau ~ Normal(m, s)
    choice_t ~ softmax(q_family(mu_t, s_t; beta) / tau)      every choice of the round but the first

with the parameters shared by the families (as in the hotspot task), so the
family-marginalised posterior is the mixture ``sum_k P(k | y) p(params | y, k)``
of the families' conditional posteriors. The fit is the engine's
(:mod:`ibo_pymc.engine.fitting`): each family's conditional posterior is
sampled by NUTS (nutpie on a cached C callback of the density, or ``pm.sample``),
started at its mode; its evidence ``p(y | k)`` is bridge-sampled, giving
``P(k | y)``; the marginal draws take each draw's family in proportion.
:class:`GridSearchModel` supplies what is particular to the task: the
families, the log-normal priors, the fused likelihood kernel (:mod:`ibo_pymc.tasks.gridsearch.density`)
and the data.

Screening: every family's mode and Laplace evidence are computed first (a few
milliseconds). A family whose Laplace evidence is more than ``screen`` (default
20) nats below the best family's has posterior probability below ~1e-8, far
under the ``relevance`` (0.001) at which its convergence would be required; it
is not sampled, its evidence is the Laplace estimate (``method`` = laplace in
``component_evidence``) and its conditional draws are drawn from the Laplace
normal on the log scale. ``screen=inf`` samples every family.

The fit is an InferenceData in the fit schema (:mod:`ibo_pymc.engine.schema`):
``posterior`` (``lambda`` or ``error_variance``, ``beta``, ``tau``, ``family_draw``;
beta of a draw whose family has none is a prior draw), ``conditional_posterior``
(each family's draws; ``beta`` is UCB's), ``log_likelihood`` (``choices``: per
round, for PSIS-LOO by round), ``component_evidence``, ``sample_stats`` (per
sampled family), ``observed_data`` (choices and rewards); attrs: the task,
subject, context, surrogate (also as ``model``), configuration and version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.engine.config import HDI_PROB, EngineConfig
from ibo_pymc.engine.model import IBOModelBase
from ibo_pymc.engine.priors import LogNormalPrior
from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch import density
from ibo_pymc.tasks.gridsearch.choice import FAMILIES, HAS_BETA, REGISTRY
from ibo_pymc.tasks.gridsearch.data import PAD, GridRounds
from ibo_pymc.tasks.gridsearch.likelihood import THETA_NAME
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet
from ibo_pymc.tasks.gridsearch.surrogate import gp_table, gp_table_nodes

#: log-normal priors: parameter -> (mean, sd) of its logarithm
PRIORS = {
    "lambda": (0.0, 1.0),
    "error_variance": (1.0, 1.0),
    "beta": (-1.6, 1.5),
    "tau": (-3.0, 1.5),
}


#: the seed stream of each part of a participant's data (:meth:`GridSearchModel.seed_entropy`)
_PART = {"spatial": 0, "conceptual": 1, "1d": 2, "2d": 3}


@dataclass(frozen=True)
class GridSearchConfig(EngineConfig):
    """What is fitted (surrogate, families, priors) and how (the engine's settings, with this task's defaults:
    tuning 500, 2 cores, target_accept 0.9, a low-rank mass matrix, thinning up to 4, a family whose chains show
    separated modes split into two strata, families screened 20 nats below the best, R-hat compared at 2
    decimals as the committed fits were made). A fit saved before strata (``max_strata`` 1) that used no
    thinning is the fit of this configuration and is reused (:meth:`~ibo_pymc.engine.config.EngineConfig.makes`).

    ``gp_table``: NUTS samples a GP family with its posterior interpolated over lambda from a table
    (:func:`~ibo_pymc.tasks.gridsearch.surrogate.gp_table`; the difference from the exact density is measured at
    every family's draws, and a family beyond :data:`~ibo_pymc.engine.fitting.SAMPLING_TOLERANCE` is sampled
    again exactly); False refactorises the posterior at every gradient. The GP's alone: the mean tracker's
    posterior is cheap, and ``gp_table=False`` with it is refused. Fits saved before the table read as False."""

    surrogate: str = "GP"
    families: tuple = tuple(FAMILIES)
    priors: dict = field(default_factory=lambda: dict(PRIORS))
    tune: int = 500
    cores: int | None = 2
    target_accept: float = 0.9
    mass_matrix: str = "low_rank"
    max_thin: int = 4
    max_strata: int = 2
    rhat_decimals: int | None = 2
    screen: float = 20.0
    gp_table: bool = True

    def __post_init__(self):
        super().__post_init__()
        if self.surrogate not in THETA_NAME:
            raise InputError(f"unknown surrogate {self.surrogate!r}; expected GP or BMT", field="surrogate")
        if self.surrogate != "GP" and not self.gp_table:
            raise InputError("gp_table applies to the GP surrogate only", field="gp_table")
        bad = [f for f in self.families if f not in REGISTRY]
        if bad or not self.families or len(set(self.families)) != len(self.families):
            raise InputError(
                f"families must be distinct names out of {', '.join(REGISTRY)}; got {self.families}", field="families"
            )

    def names(self, family: str) -> list[str]:
        """The free parameters of a family, in the density's order."""
        return [THETA_NAME[self.surrogate], *(["beta"] if family in HAS_BETA else []), "tau"]

    def prior_array(self, family: str) -> np.ndarray:
        return np.array([self.priors[n] for n in self.names(family)], float)

    @classmethod
    def from_dict(cls, d: dict):
        d = dict(d)
        # fits saved before the engine's names: r_hat, ess
        if "r_hat" in d:
            d["target_rhat"] = d.pop("r_hat")
        if "ess" in d:
            d["min_ess"] = d.pop("ess")
        d["families"] = tuple(d.get("families", FAMILIES))
        d["priors"] = {k: tuple(v) for k, v in d.get("priors", PRIORS).items()}
        if d.get("surrogate", "GP") == "GP":
            d.setdefault("gp_table", False)  # a GP fit saved before the table was sampled exactly
        return super().from_dict(d)

    def to_dict(self) -> dict:
        d = super().to_dict()
        if self.surrogate != "GP" or not self.gp_table:
            # the mean tracker's fits, and the GP's sampled exactly (as every fit before the table), keep their hash
            del d["gp_table"]
        return d

    @classmethod
    def from_json(cls, text: str) -> GridSearchConfig:
        return cls.from_dict(json.loads(text))


class GridSearchModel(IBOModelBase):
    """One participant in one context (:class:`~ibo_pymc.tasks.gridsearch.data.GridRounds`): the engine's fit with
    this task's families,
    priors, likelihood kernel and data."""

    task = "gridsearch"
    unit_name = "participant"
    observed = "choices"
    config_class = GridSearchConfig

    def __init__(self, observations: GridRounds, config: GridSearchConfig | None = None, **settings):
        super().__init__(observations, config, **settings)
        self._table = {}

    def priors(self, family: str) -> dict:
        return {n: LogNormalPrior(*self.config.priors[n]) for n in self.config.names(family)}

    def density(self, family: str):
        gr = self.obs
        buf = density.pack(
            gr.choices,
            gr.y,
            self.config.surrogate,
            family,
            self.config.prior_array(family),
            lengths=gr.lengths,
            options=gr.options,
        )
        table = self.gp_table if self.config.surrogate == "GP" and self.config.gp_table else None
        return density.GridDensity(buf, self.config.names(family), table)

    def gp_table(self):
        """The participant's GP posterior tabulated over lambda for NUTS (:func:`.surrogate.gp_table`; built once,
        on the first family sampled, shared by all): ``(table, lo, h)``, or None where it would be too large."""
        if "gp" not in self._table:
            gr = self.obs
            lo, h, K = gp_table_nodes(*self.config.priors["lambda"])
            tab = gp_table(gr.choices, gr.y, lo, h, K, lengths=gr.lengths, options=gr.options)
            self._table["gp"] = None if tab is None else (tab, lo, h)
        return self._table["gp"]

    def loglik(self, family: str, params: dict) -> np.ndarray:
        theta = params[THETA_NAME[self.config.surrogate]]
        beta = params["beta"] if family in HAS_BETA else np.zeros(len(theta))
        return round_loglik_draws(self.obs, self.config.surrogate, family, theta, beta, params["tau"])

    def predict(self, family: str, params: dict, rng: np.random.Generator) -> dict:
        """Choices drawn at each parameter point, every trial given the participant's own earlier choices and
        rewards of the round (the plain choice rule, as fitted); a round's first choice is not modelled and
        stays the observed one, and the padding after a shorter round stays padding."""
        from ibo_pymc.tasks.gridsearch.choice import choice_probabilities, is_local, local_weights
        from ibo_pymc.tasks.gridsearch.likelihood import posterior

        gr = self.obs
        theta = params[THETA_NAME[self.config.surrogate]]
        beta = params["beta"] if family in HAS_BETA else np.zeros(len(theta))
        best = np.maximum.accumulate(gr.y, axis=1)[:, :-1]  # the best reward before each modelled choice
        # a local family's weights from the previous choice of each modelled choice (padding: any row, unused)
        weights = local_weights(gr.options)[gr.choices[:, :-1]] if is_local(family) else None
        out = np.empty((len(theta), *gr.choices.shape), np.int64)
        out[:, :, 0] = gr.choices[:, 0]
        for i in range(len(theta)):
            mu, var, _, _ = posterior(
                gr.choices, gr.y, self.config.surrogate, float(theta[i]), lengths=gr.lengths, options=gr.options
            )
            probs = choice_probabilities(mu, var, best, family, beta[i], params["tau"][i], weights=weights)
            cum = np.cumsum(probs, axis=-1)
            u = rng.random(cum.shape[:-1] + (1,)) * cum[..., -1:]
            out[i, :, 1:] = np.minimum((cum < u).sum(axis=-1), cum.shape[-1] - 1)
        if gr.lengths is not None:
            out[:, np.arange(gr.choices.shape[1])[None, :] >= gr.round_lengths[:, None]] = PAD
        return {"choice": out}

    def unit_coords(self):
        return "round", self.obs.rounds.tolist()

    def select_units(self, keep):
        return self.obs.select(self.obs.rounds[np.asarray(keep, bool)])

    def data_groups(self) -> dict:
        gr = self.obs
        coords = {"round": gr.rounds.tolist(), "trial": np.arange(1, gr.choices.shape[1] + 1).tolist()}
        obs = xr.Dataset(
            {"choice": (("round", "trial"), gr.choices), "reward": (("round", "trial"), gr.z)}, coords=coords
        )
        if gr.options == GRID_8X8:  # the 2020 study's fits hold no option set: their data groups stay as they were
            return {"observed_data": obs}
        const = xr.Dataset(
            {"option_coordinates": (("option", "axis"), gr.options.coords)},
            coords={"option": np.arange(gr.options.size), "axis": ["x", "y"]},
        )
        return {"observed_data": obs, "constant_data": const}

    def fit_attrs(self) -> dict:
        return {
            "subject": int(self.obs.subject),
            "context": self.obs.context,
            "surrogate": self.config.surrogate,
            "model": self.config.surrogate,
        }

    def seed_entropy(self) -> list[int]:
        # a participant's part: 2020's contexts 0 and 1 as ever, 2018's experiments (numbered apart) 2 and 3
        return [int(self.config.seed), int(self.obs.subject), _PART.get(self.obs.context, 1)]

    def file_name(self) -> str:
        return fit_file_name(self.obs.subject, self.obs.context, self.config.surrogate)

    @classmethod
    def from_fit(cls, idata) -> GridRounds:
        obs, attrs = idata.observed_data, idata.posterior.attrs
        choices = np.asarray(obs["choice"].values, np.int64)
        padded = choices == PAD
        options = GRID_8X8
        if "constant_data" in idata.groups() and "option_coordinates" in idata.constant_data:
            options = OptionSet(np.asarray(idata.constant_data["option_coordinates"].values))
        return GridRounds(
            int(attrs["subject"]),
            str(attrs["context"]),
            np.asarray(obs["round"].values, int),
            choices,
            np.asarray(obs["reward"].values, float),
            options=options,
            lengths=(~padded).sum(axis=1) if padded.any() else None,
        )


def build_model(gr: GridRounds, family: str, config: GridSearchConfig | None = None):
    """The PyMC model of one family's conditional posterior written with the task's PyTensor Op
    (:class:`~.op.GridLogLik`; log-normal priors): the same density as the fit's, for checks."""
    import pymc as pm
    import pytensor.tensor as pt

    from ibo_pymc.tasks.gridsearch.op import GridLogLik

    config = config or GridSearchConfig()
    names = config.names(family)
    coords = {"round": gr.rounds.tolist()}
    with pm.Model(coords=coords) as m:
        v = {n: pm.LogNormal(n, mu=config.priors[n][0], sigma=config.priors[n][1]) for n in names}
        op = GridLogLik(config.surrogate, family, gr.options)
        ll, _ = op(
            pt.as_tensor(gr.choices),
            pt.as_tensor(np.nan_to_num(gr.y)),
            v[names[0]],
            v.get("beta", pt.as_tensor(0.0)),
            v["tau"],
            pt.as_tensor(gr.round_lengths),
        )
        pm.Potential("choices", ll.sum())
    return m


def fit(gr: GridRounds, config: GridSearchConfig | None = None):
    """Fit one participant in one context; returns the InferenceData (:class:`GridSearchModel`)."""
    return GridSearchModel(gr, config).fit()


def round_loglik_draws(gr: GridRounds, surrogate: str, family: str, theta, beta, tau) -> np.ndarray:
    """Per-round log-likelihood (n, R) at n parameter draws (plain choice rule)."""
    return density.round_loglik_many(
        gr.choices, gr.y, surrogate, family, theta, beta, tau, lengths=gr.lengths, options=gr.options
    )


def family_probabilities(idata) -> pd.Series:
    from ibo_pymc.engine.results import family_table

    return family_table(idata)["probability"].rename("probability")


def convergence(idata, config: GridSearchConfig | None = None) -> pd.DataFrame:
    """Per family: R-hat, ESS, divergences, and whether it meets the targets (families below ``relevance``
    exempt): :meth:`GridSearchModel.diagnostics` of a fit."""
    m = GridSearchModel(GridSearchModel.from_fit(idata), config or _config(idata))
    m.idata = idata
    return m.diagnostics()


def _config(idata) -> GridSearchConfig:
    return GridSearchConfig.from_json(idata.posterior.attrs["config"])


def summary(idata, hdi_prob: float = HDI_PROB) -> pd.DataFrame:
    """Posterior mean, sd and HDI of the family-marginalised parameters (the surrogate's parameter and tau)
    and of beta given UCB (the only family with a beta)."""
    import arviz as az

    post = idata.posterior
    names = [n for n in ("lambda", "error_variance", "tau") if n in post]
    out = az.summary(idata, var_names=names, hdi_prob=hdi_prob, kind="stats")
    if "beta" in idata["conditional_posterior"]:
        ucb = az.summary(idata["conditional_posterior"][["beta"]], hdi_prob=hdi_prob, kind="stats")
        out = pd.concat([out, ucb.rename(index={"beta": "beta | UCB"})])
    return out


def fit_file_name(subject: int, context: str, surrogate: str = "GP") -> str:
    return f"gridsearch-{int(subject):03d}-{context}-{surrogate}.nc"


def save(idata, path) -> Path:
    """Write the fit to NetCDF atomically (:func:`ibo_pymc.io.write_fit`)."""
    from ibo_pymc.io import write_fit

    return write_fit(idata, path)


def load(path):
    """A saved fit: ``(idata, config)`` (older files brought to the fit schema)."""
    m = GridSearchModel.load(path)
    return m.idata, m.config


def headline(conv: pd.DataFrame) -> dict:
    """The convergence of a fit in one row: worst R-hat, smallest ESS of the families whose convergence is
    required, all divergences, and whether the fit converged."""
    req = conv[conv["required"]]
    return {
        "r_hat_max": float(req["r_hat"].max()),
        "ess_bulk_min": float(req["ess_bulk"].min()),
        "ess_tail_min": float(req["ess_tail"].min()),
        "divergences": int(conv["divergences"].sum()),
        "converged": bool(conv["converged"].all()),
    }
