"""Fitting a subject of the hotspot task: the user-facing :class:`IBOModel`.

Why the fit is done family by family
------------------------------------
Sampling the family-marginalised model directly with NUTS fails for most
subjects: PI with xi near 0 and UCB with p near 0.5 are the same curve, so the
posterior has ridges joining separate families' modes and chains settle in
different families. The marginalised posterior is, however, a mixture of the
three family-conditional posteriors,

    ``p(params | y) = sum_k P(k | y) p(params_k | y, k) prior(params_-k)``,

and each conditional posterior is a small (3-5 parameter) problem that NUTS
handles well. So the fit is the engine's loop
(:func:`ibo_pymc.engine.fitting.fit_components`: evidences, convergence checks
of every family whose probability reaches ``relevance``, strata, thinning) on
this task's plan, :class:`~ibo_pymc.tasks.hotspot.model.sampling.JointSampling`
(the conditionals side by side in one NUTS run started from the paper's grid
posterior); the assembly (:mod:`~ibo_pymc.tasks.hotspot.model.assembly`) then
gives each draw a component in proportion to ``P(component | y)``, hence a
family, that component's conditional draw, and prior draws for the other
families' shape parameters; ``family_prob`` holds the per-draw
``P(k | y, params)`` (Rao-Blackwellised; equal to what ``pymc_extras``'
``recover_marginals`` gives on the generative model, tested).

All 84 subject-model pairs of the study converge this way with default
settings (``models/sampling/convergence.csv``), and their family
probabilities and posterior means agree with the fine-grid posterior of
:mod:`ibo_pymc.tasks.hotspot.model.fine_grid` (``models/sampling/fine_grid_validation.csv``).

The result is an :class:`arviz.InferenceData` whose attrs hold the
configuration, so :meth:`IBOModel.load` rebuilds the model from a saved file.
The jobs live in their own modules:
:mod:`~ibo_pymc.tasks.hotspot.model.config` (model, sampler and convergence configuration;
hashes), :mod:`~ibo_pymc.tasks.hotspot.model.sampling` (the joint plan),
:mod:`~ibo_pymc.tasks.hotspot.model.samplers` (the nutpie and ``pm.sample`` back
ends), :mod:`~ibo_pymc.tasks.hotspot.model.parameters` (a component's parameters and their
logit map), :mod:`~ibo_pymc.tasks.hotspot.model.evidence` (bridge sampling, :mod:`ibo_pymc.engine.bridge`),
:mod:`~ibo_pymc.tasks.hotspot.model.diagnostics` (R-hat/ESS tables, summaries) and
:mod:`~ibo_pymc.tasks.hotspot.model.assembly` (the InferenceData).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.engine.model import IBOModelBase
from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
from ibo_pymc.tasks.hotspot.forward.variants import get_variant
from ibo_pymc.tasks.hotspot.model.assembly import FORMAT, assemble
from ibo_pymc.tasks.hotspot.model.builder import (
    SubjectData,
    build_model,
)
from ibo_pymc.tasks.hotspot.model.config import (
    SAMPLERS,
    ConvergencePolicy,
    FitConfig,
    ModelConfig,
    SamplerConfig,
    config_difference,
    fit_file_name,
)
from ibo_pymc.tasks.hotspot.model.diagnostics import (
    diagnostics,
    summary,
)
from ibo_pymc.tasks.hotspot.model.parameters import ComponentParameters


class IBOModel(IBOModelBase):
    """Inverse Bayesian optimisation for one subject of the hotspot task: build, fit, summarise, LOO, plot,
    save, load.

    >>> m = IBOModel(data.observations(28), model="tau_pm", seed=1)  # doctest: +SKIP
    >>> idata = m.fit()  # doctest: +SKIP
    >>> m.family_probabilities()
    ... m.loo()
    ... m.plot()  # doctest: +SKIP

    A model of the base class (:class:`~ibo_pymc.engine.model.IBOModelBase`): the fit (the engine's loop on
    this task's joint plan), ``loo()`` (the engine's reliable LOO over rounds), ``fit_or_load`` and the refits
    go through the base class, and so does ``family_probabilities()``: ``P(family | data)`` from the
    components' evidences, what ``ibo-sample`` prints (the per-draw ``family_prob``, whose mean estimates the
    same probability with Monte-Carlo error, stays in the fit). The assembly and the tables of :meth:`summary`
    and :meth:`diagnostics` are this task's (its fits hold a posterior predictive and ``family_prob``).

    ``IBOModel([obs_1, obs_2, ...], hierarchical=True)`` (or a whole data set) builds the hierarchical model of
    several subjects instead (the engine's :class:`~ibo_pymc.engine.hierarchical.HierarchicalModel`).
    """

    def __init__(
        self,
        observations: SubjectObservations,
        model: str | None = None,
        config: FitConfig | None = None,
        *,
        hierarchical: bool = False,
        **kw,
    ):  # hierarchical=True: the base class builds the hierarchical model
        """``model`` and keyword settings (draws, seed, ...) override ``config`` (default ``FitConfig()``)."""
        if model is not None:
            kw["model"] = model
        super().__init__(observations, config, **kw)
        config = self.config
        self.variant = get_variant(config.model)
        if observations.n_rounds == 0:
            raise InputError(f"subject {observations.subject} has no eligible rounds to fit", field="subject")
        self.tables = load_tables(config.tables)
        self.sd = SubjectData.prepare(observations, config.model, self.tables)
        self.parameters = ComponentParameters(self.variant)

    task = "hotspot"
    observed = "theta2"
    config_class = FitConfig

    # --- model -------------------------------------------------------------------
    @property
    def families(self) -> tuple[str, ...]:
        return self.sd.families

    def priors(self, family: str) -> dict:
        """The family's parameters and their uniform priors, in the unconstrained order: its shape parameter
        (``xi_pi``, ``xi_ei``, ``p_ucb``), gamma, w and the variant's free taus."""
        from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
        from ibo_pymc.tasks.hotspot.forward.priors import PRIORS

        fam = get_family(family)
        return {fam.var_name: fam.prior, **{n: PRIORS[n] for n in ("gamma", "w", *self.variant.taus)}}

    def subject_draws(self, n_draws: int = 500, *, drop_below: float = 40.0):
        """What the hierarchical model takes of this fit: each component's draws, strata included
        (:func:`ibo_pymc.tasks.hotspot.model.hierarchical.subject_draws`)."""
        from ibo_pymc.tasks.hotspot.model.hierarchical import subject_draws

        return subject_draws(self, n_draws, drop_below=drop_below)

    def hierarchical_loglik(self, family: str, params: dict) -> np.ndarray:
        """The log-likelihood summed over the rounds at draws ``params`` ({name: (M,)}: the family's threshold
        and gamma, w and the variant's taus) of ``family``: the compiled per-draw kernel
        (:meth:`~ibo_pymc.tasks.hotspot.model.parameters.ModelParameters.loglik`)."""
        from ibo_pymc.tasks.hotspot.forward.acquisition import get_family

        p = self.parameters
        d = {"param": np.asarray(params[get_family(family).var_name], float)}
        for key in ("gamma", "w", *(k for k in ("tau_neg", "tau_pos") if p.model_name(k) in params)):
            d[key] = np.asarray(params[p.model_name(key)], float)
        return p.loglik(self.sd, family, p.with_taus(d), summed=True)

    def build(self, layout: str = "marginal"):
        """The PyMC model (``marginal``: the paper's model; ``stacked``: conditionals side by side)."""
        return build_model(self.sd, layout=layout)

    # --- fitting: the engine's loop on this task's joint plan ------------------------------------------
    def fit(self, progress: bool = True, *, cores: int | None = None):
        """Sample, check convergence, and return the InferenceData (also kept as ``self.idata``): the engine's
        loop (:func:`~ibo_pymc.engine.fitting.fit_components`) on this task's
        :class:`~ibo_pymc.tasks.hotspot.model.sampling.JointSampling`. ``progress``: the sampler's progress bar
        and a line per rerun; ``cores``: threads for the chains (default: the configuration's, else one per
        chain up to the number of cores); it changes the speed, not the draws."""
        return super().fit(progress, cores=cores)

    def sampling_plan(self, *, progress: bool = True, cores: int | None = None):
        from ibo_pymc.tasks.hotspot.model.sampling import JointSampling

        return JointSampling(self, progress=progress, cores=cores)

    def assemble(self, plan, comps, fits, probabilities):
        """The InferenceData of the hotspot schema (:mod:`~ibo_pymc.tasks.hotspot.model.assembly`)."""
        return assemble(self.sd, self.config, self.parameters, plan.outcome(comps, probabilities), plan.assembly_rng())

    # --- the posterior predictive, drawn on demand ---------------------------------------------------
    def predictive_rng(self) -> np.random.Generator:
        """The fit's predictive stream (:func:`~ibo_pymc.tasks.hotspot.model.sampling.seed_streams`): the one
        whose draws every fit held before saving became compact, so :meth:`posterior_predictive` gives those
        draws again."""
        from ibo_pymc.tasks.hotspot.model.sampling import seed_streams

        return np.random.default_rng(seed_streams(self.config.seed).predictive)

    def draw_predictive(self, rng: np.random.Generator) -> dict:
        """theta2 at every draw, all families in one call
        (:func:`~ibo_pymc.tasks.hotspot.model.assembly.predictive`)."""
        from ibo_pymc.tasks.hotspot.model.assembly import predictive

        return {"theta2": predictive(self.sd, self.parameters, self._need_fit().posterior, rng)}

    # --- what the engine's exact leave-one-round-out refits (ibo_pymc.engine.loo.UnitRefit) call ----------

    def unit_coords(self) -> tuple[str, list]:
        return "round", list(np.asarray(self.obs.session_id).tolist())

    def select_units(self, keep) -> SubjectObservations:
        return self.obs.subset(np.asarray(keep, bool))

    def predictive_loglik(self, idata, observations) -> np.ndarray:
        """log p(theta2_i | draw s) of ``observations`` at every draw of ``idata``: (draws, rounds)."""
        from ibo_pymc.tasks.hotspot.model.pointwise import heldout_loglik

        return heldout_loglik(idata, observations, tables=self.tables)

    def fit_attrs(self) -> dict:
        return {"subject": int(self.obs.subject), "model": self.config.model}

    def component_draws(self) -> list:
        """Each component's (family's or stratum's) draws for the engine's LOO
        (:func:`ibo_pymc.tasks.hotspot.loo.component_draws`)."""
        from ibo_pymc.tasks.hotspot.loo import component_draws

        return component_draws(self)

    def file_name(self) -> str:
        return fit_file_name(self.obs.subject, self.config.model)

    def plot(self, *, seed: int = 0):
        """The subject's moves with the prediction region of theta2 and the credible band of the acquisition
        curve (paper Figs 7-8: :func:`ibo_pymc.tasks.hotspot.fit_plots.plot_fit`); returns the figure."""
        from ibo_pymc.tasks.hotspot.fit_plots import plot_fit

        return plot_fit(self._need_fit(), seed=seed)

    # --- results ---------------------------------------------------------------------------
    def diagnostics(self) -> pd.DataFrame:
        """R-hat, bulk/tail ESS per posterior variable, and divergences (see :func:`diagnostics`). Computed once
        per fit (the report, :meth:`failing` and the cohort's convergence row each ask for it)."""
        idata = self._need_fit()
        cached = getattr(self, "_diagnostics", None)
        if cached is None or cached[0] is not idata:
            cached = self._diagnostics = (idata, diagnostics(idata))
        return cached[1].copy()

    def summary(self, hdi_prob: float = HDI_PROB) -> pd.DataFrame:
        """Posterior summary of the continuous parameters given each family (conditional draws)."""
        return summary(self._need_fit(), hdi_prob=hdi_prob)

    def report(self, elapsed: float | None = None, hdi_prob: float = HDI_PROB) -> str:
        """The fit in words, as ``ibo-sample`` prints it (:func:`ibo_pymc.tasks.hotspot.model.report.fit_report`)."""
        from ibo_pymc.tasks.hotspot.model.report import fit_report

        return fit_report(self, elapsed, hdi_prob)

    # --- persistence -----------------------------------------------------------------------
    @property
    def table_format(self) -> int:
        """Format of the argmax tables the fit was sampled with (1 for fits saved before it was recorded)."""
        return int(self._need_fit().posterior.attrs.get("table_format", 1))

    def __reduce__(self):
        # a fit travels to a worker process as its rounds, configuration and draws; the
        # worker rebuilds the argmax tables from its own cache instead of receiving them
        return (_rebuild, (self.obs, self.config, self.idata))

    @classmethod
    def load(cls, path, *, config: FitConfig | None = None) -> IBOModel:
        """Reload a saved fit and rebuild its model (data, configuration, tables).

        With ``config``, a fit made with any other configuration is refused
        (:class:`~ibo_pymc.errors.InputError` naming both hashes).
        """
        from ibo_pymc.engine.schema import open_fit

        path = Path(path)
        idata = open_fit(path)
        attrs = idata.posterior.attrs if "posterior" in idata.groups() else {}
        if "config" not in attrs or "constant_data" not in idata.groups() or "observed_data" not in idata.groups():
            raise InputError("not an ibo-pymc fit (no 'config' attribute or data groups)", path=path, field="config")
        expected = config
        try:
            saved = FitConfig.from_dict(json.loads(attrs["config"]))
            rounds = idata.constant_data
            obs = SubjectObservations(
                subject=int(attrs["subject"]),
                user_id=int(attrs["user_id"]),
                session_id=np.asarray(rounds["round"].values),
                round_index=np.asarray(rounds["round_index"].values),
                delta_r1=np.asarray(rounds["delta_r1"].values, float),
                theta2=np.asarray(idata.observed_data["theta2"].values, float),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise InputError(f"malformed ibo-pymc fit ({exc})", path=path, field="config") from None
        if expected is not None and expected.key() != saved.key():
            raise InputError(
                f"fitted with another configuration (hash {saved.key()}, expected {expected.key()}: "
                f"{config_difference(saved, expected)}); fit again or load it without a configuration",
                path=path,
                field="config",
            )
        m = cls(obs, config=saved)
        m.idata = idata
        return m


def _rebuild(obs, config, idata) -> IBOModel:
    m = IBOModel(obs, config=config)
    m.idata = idata
    return m


__all__ = [
    "FORMAT",
    "SAMPLERS",
    "ConvergencePolicy",
    "FitConfig",
    "IBOModel",
    "ModelConfig",
    "SamplerConfig",
    "diagnostics",
    "fit_file_name",
    "summary",
]
