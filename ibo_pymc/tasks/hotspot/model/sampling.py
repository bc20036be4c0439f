"""How a hotspot fit's components are sampled: side by side in one NUTS run, started from the paper's grid posterior.

The engine's loop (:func:`ibo_pymc.engine.fitting.fit_components`) is the same as for every task; this plan
(:class:`JointSampling`) lays the components (families, or strata of one) out as the ``stacked`` model of
:func:`~ibo_pymc.tasks.hotspot.model.builder.build_model` and samples them in one run of nutpie (default, on the
compiled density) or ``pm.sample`` (:mod:`~ibo_pymc.tasks.hotspot.model.samplers`):

* every chain starts at a draw from each component's conditional posterior on the paper's grid (a fraction of a
  second), so that no chain starts in a poor local mode of the piecewise-linear argmax lookup;
* a component's evidence is bridge-sampled under its own, possibly restricted, uniform prior
  (:mod:`~ibo_pymc.tasks.hotspot.model.evidence`), and a stratum is weighted by its share of the prior volume;
* a multimodal component is split where its pooled draws dip between the modes
  (:func:`~ibo_pymc.engine.strata.split_point`; subject 27's PI: tau near 0 with xi near 16, or tau near 1
  with xi near 7);
* a rerun (a split, or a thinning) resamples every component, with the same seeds: tuning keeps its length
  and the draws are ``thin`` times as many, every ``thin``-th kept.

Seeds: the configuration's seed spawns five streams (chain starts, the sampler, bridge sampling, the assembly's
mixing and its posterior predictive), each started afresh at every pass, so a fit is reproduced exactly.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from ibo_pymc.engine.assembly import STATS
from ibo_pymc.engine.fitting import ComponentFit, SamplingPlan
from ibo_pymc.engine.strata import split_point
from ibo_pymc.tasks.hotspot.forward.priors import UniformPrior
from ibo_pymc.tasks.hotspot.model.assembly import FitOutcome
from ibo_pymc.tasks.hotspot.model.builder import split_component, whole_families
from ibo_pymc.tasks.hotspot.model.diagnostics import conditional_diagnostics
from ibo_pymc.tasks.hotspot.model.evidence import component_evidences
from ibo_pymc.tasks.hotspot.model.samplers import BACKENDS


class SeedStreams(NamedTuple):
    """A hotspot fit's seed streams, one per purpose, in the order they are spawned (the order fixes the draws)."""

    init: np.random.SeedSequence
    sampler: np.random.SeedSequence
    bridge: np.random.SeedSequence
    mix: np.random.SeedSequence
    #: the posterior predictive's (:meth:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel.predictive_rng`)
    predictive: np.random.SeedSequence


def seed_streams(seed: int) -> SeedStreams:
    """The fit's seed streams (:class:`SeedStreams`) spawned from its configuration's ``seed``."""
    return SeedStreams(*np.random.SeedSequence(seed).spawn(len(SeedStreams._fields)))


class JointSampling(SamplingPlan):
    """The hotspot task's plan (module docstring) for an :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`."""

    joint = True

    def __init__(self, model, *, progress: bool = True, cores: int | None = None):
        from ibo_pymc.tasks.hotspot.paper_grid.engine import PaperGridConfig, fit_paper_grid

        self.model, self.progress, self.cores = model, progress, cores
        cfg = model.config
        streams = seed_streams(cfg.seed)
        self.s_init, self.s_bridge, self.s_mix = streams.init, streams.bridge, streams.mix
        self.sampler_seed = int(streams.sampler.generate_state(1, np.uint32)[0])
        self.grid = fit_paper_grid(
            model.obs.delta_r1,
            model.obs.theta2,
            cfg.model,
            config=PaperGridConfig(tables=cfg.tables),
            tables=model.tables,
        )

    # --- the engine's questions --------------------------------------------------------------------
    def components(self) -> list:
        return list(whole_families(self.model.families))

    def label(self, comp) -> str:
        return comp.label

    def log_share(self, comp) -> float:
        return comp.log_width_fraction

    def log(self, message: str) -> None:
        print(message)

    def sample(self, comps, todo, thin):
        m, cfg, t = self.model, self.model.config, thin[0]
        inits = self.initial_points(comps, np.random.default_rng(self.s_init))
        cond, stats = self._run(comps, inits, cfg.draws * t)
        self.cond = {k: v[:, t - 1 :: t] for k, v in cond.items()}
        self.stats = stats.isel(draw=slice(t - 1, None, t))
        self.thin = t
        self.diagnostics = conditional_diagnostics(m.parameters, comps, self.cond)
        return {
            k: ComponentFit(c, c.family, c.label, (), None, None, t, **self.diagnostics[c.label])
            for k, c in enumerate(comps)
        }

    def evidences(self, comps, fits, todo):
        self.evidence = component_evidences(
            self.model.sd, self.model.parameters, comps, self.cond, np.random.default_rng(self.s_bridge)
        )
        for f, e in zip(fits, self.evidence):
            f.log_evidence, f.rel_error = e.log_evidence, e.rel_error

    def split(self, comps, i, fit):
        p = self.model.parameters
        d = p.draws(comps, self.cond, i)
        cols = p.columns(comps[i])
        found = split_point(
            {p.model_name(key): d[key] for key, _, _ in cols}, {p.model_name(key): (lo, hi) for key, lo, hi in cols}
        )
        return None if found is None else split_component(comps, i, *found)

    # --- what the hotspot assembly takes -------------------------------------------------------------
    def outcome(self, comps, probabilities) -> FitOutcome:
        return FitOutcome(
            tuple(comps), self.cond, self.stats, self.evidence, probabilities, self.diagnostics, self.thin
        )

    def assembly_rng(self) -> np.random.Generator:
        """The mixing's generator."""
        return np.random.default_rng(self.s_mix)

    # --- the joint run ---------------------------------------------------------------------------------
    def _blocks(self, comps):
        from ibo_pymc.tasks.hotspot.model.compiled import blocks_for

        return blocks_for(self.model.config.model, comps, "stacked")

    def initial_points(self, comps, rng: np.random.Generator, n: int = 256) -> np.ndarray:
        """Chain starts (unconstrained, stacked layout) drawn from the grid posterior."""
        from ibo_pymc.tasks.hotspot.paper_grid.engine import sample_cells

        grid = self.grid
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

    def _run(self, comps, inits, draws):
        """Conditional draws {name: (chain, draw[, component])} and sample_stats of one joint run."""
        m, cfg = self.model, self.model.config
        cores = self.cores or cfg.cores or min(cfg.chains, os.cpu_count() or 1)
        post, stats = BACKENDS[cfg.sampler](
            m.sd,
            comps,
            inits,
            draws=draws,
            tune=cfg.tune,
            chains=cfg.chains,
            cores=cores,
            seed=self.sampler_seed,
            progress=self.progress,
            constrain=lambda z: self._constrain(comps, z),
        )
        names = [b.name for b in self._blocks(comps)]
        cond = {n: np.asarray(post[n].values, float) for n in names}
        if (
            post.sizes["draw"] < draws
            or post.sizes["chain"] < cfg.chains
            or not all(np.isfinite(v).all() for v in cond.values())
        ):
            # on Ctrl-C nutpie and pm.sample stop and return what they have (nutpie pads with NaN): never keep that
            raise KeyboardInterrupt("sampling was interrupted")
        keep = [v for v in STATS if v in stats.data_vars and set(stats[v].dims) <= {"chain", "draw"}]
        stats = stats[keep]
        stats = stats.assign_coords(chain=np.arange(stats.sizes["chain"]), draw=np.arange(stats.sizes["draw"]))
        if "diverging" not in stats:
            raise RuntimeError("the sampler reported no divergence statistics")
        return cond, stats

    def _constrain(self, comps, z) -> dict:
        """A stacked-layout unconstrained point as PyMC initial values."""
        out, j = {}, 0
        for b in self._blocks(comps):
            v = np.array(
                [UniformPrior(lo, hi).from_unconstrained(x) for lo, hi, x in zip(b.lo, b.hi, z[j : j + b.size])]
            )
            out[b.name] = float(v[0]) if b.size == 1 else v
            j += b.size
        return out
