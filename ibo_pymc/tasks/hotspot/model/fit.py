"""Fitting a subject: the user-facing :class:`IBOModel` (SPEC section 7).

Why the fit is done family by family
------------------------------------
Sampling the family-marginalised model directly with NUTS fails for most
subjects: PI with xi near 0 and UCB with p near 0.5 are the same curve, so the
posterior has ridges joining separate families' modes and chains settle in
different families. The marginalised posterior is, however, a mixture of the
three family-conditional posteriors,

    p(params | y) = sum_k P(k | y) p(params_k | y, k) prior(params_-k),

and each conditional posterior is a small (3-5 parameter) problem that NUTS
handles well. So the fit

1. runs the paper's grid engine (a fraction of a second) and starts every
   chain at a draw from each family's conditional grid posterior, so that no
   chain starts in a poor local mode of the (piecewise-linear) lookup;
2. samples the three conditional posteriors side by side in one NUTS run (the
   ``stacked`` layout of :func:`~ibo_pymc.tasks.hotspot.model.builder.build_model`) with
   nutpie (default) or ``pm.sample``;
3. estimates each family's marginal likelihood by bridge sampling
   (:mod:`ibo_pymc.tasks.hotspot.model.evidence`) and hence ``P(k | y)``;
4. checks convergence (R-hat, bulk and tail ESS) of every family whose
   posterior probability is at least ``relevance`` (default 0.001). A family
   whose conditional posterior is itself multimodal (subject 27: PI with
   tau near 0 and xi near 16, or tau near 1 and xi near 7) fails because
   chains cannot cross between the modes. Its pooled draws then show the gap:
   :func:`split_point` finds the parameter and value with the deepest dip
   between two modes, and the family is split there into two *strata*,
   each a component of the stacked layout with its prior restricted to its
   side (:class:`~ibo_pymc.tasks.hotspot.model.builder.Component`). Every stratum gets its
   own NUTS block and bridge-sampling evidence, weighted by its share of the
   prior volume, so the family's evidence is the sum over its strata and its
   conditional posterior the evidence-weighted mixture (at most
   ``max_strata`` per family). A component that still fails is sampled
   again with twice as many iterations kept every second (thinning), up to
   ``max_thin``;
5. assembles draws of the marginalised model (:mod:`~ibo_pymc.tasks.hotspot.model.assembly`):
   each draw gets a component in proportion to ``P(component | y)``, hence
   a family, that component's conditional draw, and prior draws for the other
   families' shape parameters; ``family_prob`` holds the per-draw
   ``P(k | y, params)`` (Rao-Blackwellised; equal to what ``pymc_extras``'
   ``recover_marginals`` gives on the generative model, tested).

All 84 subject-model pairs of the study converge this way with default
settings (``models/sampling/convergence.csv``), and their family
probabilities and posterior means agree with the fine-grid posterior of
:mod:`ibo_pymc.tasks.hotspot.model.fine_grid` (``models/sampling/fine_grid_validation.csv``).

The result is an :class:`arviz.InferenceData` (groups in
:mod:`~ibo_pymc.tasks.hotspot.model.assembly`) whose attrs hold the configuration, so
:meth:`IBOModel.load` rebuilds the model from a saved file.

The jobs live in their own modules; this one orchestrates them:
:mod:`~ibo_pymc.tasks.hotspot.model.config` (model, sampler and convergence configuration;
hashes), :mod:`~ibo_pymc.tasks.hotspot.model.samplers` (the nutpie and ``pm.sample`` back
ends), :mod:`~ibo_pymc.tasks.hotspot.model.parameters` (a component's parameters and their
logit map), :mod:`~ibo_pymc.engine.strata` (where to split a multimodal
component), :mod:`~ibo_pymc.tasks.hotspot.model.evidence` (bridge sampling, :mod:`ibo_pymc.engine.bridge`),
:mod:`~ibo_pymc.tasks.hotspot.model.diagnostics` (R-hat/ESS tables, summaries) and
:mod:`~ibo_pymc.tasks.hotspot.model.assembly` (the InferenceData).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.engine.mixing import softmax
from ibo_pymc.engine.model import IBOModelBase
from ibo_pymc.engine.strata import split_point
from ibo_pymc.errors import InputError
from ibo_pymc.io import write_fit
from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
from ibo_pymc.tasks.hotspot.forward.priors import UniformPrior
from ibo_pymc.tasks.hotspot.forward.variants import get_variant
from ibo_pymc.tasks.hotspot.model.assembly import FORMAT, FitOutcome, assemble
from ibo_pymc.tasks.hotspot.model.builder import (
    SubjectData,
    build_model,
    split_component,
    whole_families,
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
    conditional_diagnostics,
    converged,
    diagnostics,
    failing_quantities,
    summary,
)
from ibo_pymc.tasks.hotspot.model.evidence import component_evidences
from ibo_pymc.tasks.hotspot.model.parameters import ComponentParameters
from ibo_pymc.tasks.hotspot.model.samplers import BACKENDS


class IBOModel(IBOModelBase):
    """Inverse Bayesian optimisation for one subject of the hotspot task: build, fit, summarise, LOO, plot,
    save, load.

    >>> m = IBOModel(data.observations(28), model="tau_pm", seed=1)   # doctest: +SKIP
    >>> idata = m.fit()                                                # doctest: +SKIP
    >>> m.family_probabilities(); m.loo(); m.plot()                    # doctest: +SKIP

    A model of the base class (:class:`~ibo_pymc.engine.model.IBOModelBase`): ``loo()`` (the engine's reliable
    LOO over rounds), ``fit_or_load`` and the refits go through the base class. The fit itself is still this
    task's own loop (all families side by side in one NUTS run started from the paper's grid posterior, with
    strata; module docstring), and so are the tables of :meth:`summary` and :meth:`diagnostics`.

    ``IBOModel([obs_1, obs_2, ...], hierarchical=True)`` (or a whole data set) builds the hierarchical model of
    several subjects instead (:class:`~ibo_pymc.tasks.hotspot.model.hierarchical.HierarchicalIBOModel`).
    """

    def __new__(cls, observations=None, model: str | None = None, config: FitConfig | None = None, *, hierarchical: bool = False, **kw):
        if hierarchical:  # the model of several subjects with partial pooling
            from ibo_pymc.tasks.hotspot.model.hierarchical import HierarchicalIBOModel

            return HierarchicalIBOModel(observations, model, config, fitter=_fit_one, **kw)
        return super().__new__(cls)

    def __init__(self, observations: SubjectObservations, model: str | None = None, config: FitConfig | None = None, *,
                 hierarchical: bool = False, **kw):
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

    def build(self, layout: str = "marginal"):
        """The PyMC model (``marginal``: the paper's model; ``stacked``: conditionals side by side)."""
        return build_model(self.sd, layout=layout)

    def _blocks(self, components):
        from ibo_pymc.tasks.hotspot.model.compiled import blocks_for

        return blocks_for(self.config.model, components, "stacked")

    # --- fitting -----------------------------------------------------------------
    def fit(self, progress: bool = True, *, cores: int | None = None):
        """Sample, check convergence, and return the InferenceData (also kept as ``self.idata``).

        ``cores``: threads for the chains (default: the configuration's, else one
        per chain up to the number of cores); it changes the speed, not the draws.
        """
        from ibo_pymc.tasks.hotspot.paper_grid.engine import (
            PaperGridConfig,
            fit_paper_grid,
        )

        cfg = self.config
        ss = np.random.SeedSequence(cfg.seed)
        s_init, s_sampler, s_bridge, s_mix, s_ppc = ss.spawn(5)
        grid = fit_paper_grid(self.obs.delta_r1, self.obs.theta2, cfg.model, config=PaperGridConfig(tables=cfg.tables), tables=self.tables)
        sampler_seed = int(s_sampler.generate_state(1, np.uint32)[0])
        comps = whole_families(self.families)
        thin = 1
        while True:
            inits = self._initial_points(grid, comps, np.random.default_rng(s_init))
            cond, stats = self._sample(comps, inits, cfg.draws * thin, sampler_seed, progress, cores)
            cond = {k: v[:, thin - 1 :: thin] for k, v in cond.items()}
            stats = stats.isel(draw=slice(thin - 1, None, thin))
            evid = component_evidences(self.sd, self.parameters, comps, cond, np.random.default_rng(s_bridge))
            probs = softmax(np.array([e.log_evidence + c.log_width_fraction for e, c in zip(evid, comps)]))
            diag = conditional_diagnostics(self.parameters, comps, cond)
            failing = [i for i, c in enumerate(comps) if probs[i] >= cfg.relevance and not converged(diag[c.label], cfg)]
            if not failing:
                break
            split = self._stratify(comps, cond, failing)
            if split is not None:
                comps = split
                if progress:
                    print(f"  multimodal; sampling the strata {', '.join(c.label for c in comps if c.n_strata > 1)} separately")
                continue
            if thin * 2 > cfg.max_thin:
                break
            thin *= 2
            if progress:
                labels = ", ".join(comps[i].label for i in failing)
                nth = {2: "2nd", 3: "3rd"}.get(thin, f"{thin}th")
                print(f"  not yet converged ({labels}); sampling again, keeping every {nth} draw")
        outcome = FitOutcome(comps, cond, stats, evid, probs, diag, thin)
        self.idata = assemble(self.sd, cfg, self.parameters, outcome, np.random.default_rng(s_mix), np.random.default_rng(s_ppc))
        return self.idata

    def _stratify(self, comps, cond, failing):
        """Split the first failing, multimodal component at its density minimum (or None)."""
        for i in failing:
            c = comps[i]
            if sum(q.family == c.family for q in comps) >= self.config.max_strata:
                continue
            d = self.parameters.draws(comps, cond, i)
            name = self.parameters.model_name
            cols = self.parameters.columns(c)
            found = split_point({name(key): d[key] for key, _, _ in cols}, {name(key): (lo, hi) for key, lo, hi in cols})
            if found is not None:
                return split_component(comps, i, *found)
        return None

    def _initial_points(self, grid, comps, rng: np.random.Generator, n: int = 256) -> np.ndarray:
        """Chain starts (unconstrained, stacked layout) drawn from the grid posterior."""
        from ibo_pymc.tasks.hotspot.paper_grid.engine import sample_cells

        w0 = float(np.clip(grid.w_em, 0.05, 0.95))
        per_comp = [sample_cells(grid, n, rng, c.family, param_range=c.bounds("param")) for c in comps]
        cols = []
        for b in self._blocks(comps):
            if b.code == 0:
                cols.append(UniformPrior(b.lo[0], b.hi[0]).to_unconstrained(per_comp[b.component]["param"])[:, None])
                continue
            vals = []
            for c, lo, hi in zip(per_comp, b.lo, b.hi):
                v = {
                    "gamma": c["gamma"],
                    "w": np.clip(w0 + rng.uniform(-0.05, 0.05, n), 0.01, 0.99),
                    "tau": c["tau_pos"],
                    "tau_neg": c["tau_neg"],
                    "tau_pos": c["tau_pos"],
                }[b.name]
                # a stratum may exclude the grid's draws: start uniformly inside it instead
                v = np.where((v > lo) & (v < hi), v, rng.uniform(lo, hi, n))
                vals.append(UniformPrior(lo, hi).to_unconstrained(v))
            cols.append(np.stack(vals, axis=1))
        return np.concatenate(cols, axis=1)

    def _sample(self, comps, inits, draws, seed, progress, cores=None):
        """Conditional draws {name: (chain, draw[, component])} and sample_stats."""
        cfg = self.config
        cores = cores or cfg.cores or min(cfg.chains, os.cpu_count() or 1)
        post, stats = BACKENDS[cfg.sampler](
            self.sd, comps, inits, draws=draws, tune=cfg.tune, chains=cfg.chains, cores=cores, seed=seed,
            progress=progress, constrain=lambda z: self._constrain(comps, z),
        )
        names = [b.name for b in self._blocks(comps)]
        cond = {n: np.asarray(post[n].values, float) for n in names}
        if post.sizes["draw"] < draws or post.sizes["chain"] < cfg.chains or not all(np.isfinite(v).all() for v in cond.values()):
            # on Ctrl-C nutpie and pm.sample stop and return what they have (nutpie pads with
            # NaN): never keep that
            raise KeyboardInterrupt("sampling was interrupted")
        keep = [v for v in stats.data_vars if set(stats[v].dims) <= {"chain", "draw"}]
        stats = stats[keep]
        stats = stats.assign_coords(chain=np.arange(stats.sizes["chain"]), draw=np.arange(stats.sizes["draw"]))
        if "diverging" not in stats:
            raise RuntimeError("the sampler reported no divergence statistics")
        return cond, stats

    def _constrain(self, comps, z) -> dict:
        """A stacked-layout unconstrained point as PyMC initial values."""
        out, j = {}, 0
        for b in self._blocks(comps):
            v = np.array([UniformPrior(lo, hi).from_unconstrained(x) for lo, hi, x in zip(b.lo, b.hi, z[j : j + b.size])])
            out[b.name] = float(v[0]) if b.size == 1 else v
            j += b.size
        return out

    # --- what the engine's exact leave-one-round-out refits (ibo_pymc.engine.loo.UnitRefit) call ----------
    task = "hotspot"
    observed = "theta2"

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
    def family_probabilities(self) -> pd.Series:
        """Posterior probability of each family (mean of ``family_prob``)."""
        idata = self._need_fit()
        fp = idata.posterior["family_prob"].mean(("chain", "draw"))
        return fp.to_series().rename("probability")

    def diagnostics(self) -> pd.DataFrame:
        """R-hat, bulk/tail ESS per posterior variable, and divergences (see :func:`diagnostics`)."""
        return diagnostics(self._need_fit())

    def summary(self, hdi_prob: float = 0.95) -> pd.DataFrame:
        """Posterior summary of the continuous parameters given each family (conditional draws)."""
        return summary(self._need_fit(), hdi_prob=hdi_prob)

    # --- persistence -----------------------------------------------------------------------
    @property
    def table_format(self) -> int:
        """Format of the argmax tables the fit was sampled with (1 for fits saved before it was recorded)."""
        return int(self._need_fit().posterior.attrs.get("table_format", 1))

    def save(self, path) -> Path:
        """Write the fit as NetCDF, atomically (temporary file in the same folder, then rename)."""
        return write_fit(self._need_fit(), path)

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
            raise InputError(f"fitted with another configuration (hash {saved.key()}, expected {expected.key()}: "
                             f"{config_difference(saved, expected)}); fit again or load it without a configuration",
                             path=path, field="config")
        m = cls(obs, config=saved)
        m.idata = idata
        return m



def _fit_one(obs, config) -> IBOModel:
    """A subject's own fit, as the hierarchical model's first stage."""
    m = IBOModel(obs, config=config)
    m.fit(progress=False)
    return m


def _rebuild(obs, config, idata) -> IBOModel:
    m = IBOModel(obs, config=config)
    m.idata = idata
    return m


__all__ = ["FORMAT", "SAMPLERS", "ConvergencePolicy", "FitConfig", "IBOModel", "ModelConfig", "SamplerConfig", "diagnostics",
           "failing_quantities", "fit_file_name", "summary"]
