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
   ``stacked`` layout of :func:`~ibo_pymc.model.builder.build_model`) with
   nutpie (default) or ``pm.sample``;
3. estimates each family's marginal likelihood by bridge sampling
   (:mod:`ibo_pymc.model.evidence`) and hence ``P(k | y)``;
4. checks convergence (R-hat, bulk and tail ESS) of every family whose
   posterior probability is at least ``relevance`` (default 0.001). A family
   whose conditional posterior is itself multimodal (subject 27: PI with
   tau near 0 and xi near 16, or tau near 1 and xi near 7) fails because
   chains cannot cross between the modes. Its pooled draws then show the gap:
   :func:`split_point` finds the parameter and value with the deepest dip
   between two modes, and the family is split there into two *strata*,
   each a component of the stacked layout with its prior restricted to its
   side (:class:`~ibo_pymc.model.builder.Component`). Every stratum gets its
   own NUTS block and bridge-sampling evidence, weighted by its share of the
   prior volume, so the family's evidence is the sum over its strata and its
   conditional posterior the evidence-weighted mixture (at most
   ``max_strata`` per family). A component that still fails is sampled
   again with twice as many iterations kept every second (thinning), up to
   ``max_thin``;
5. assembles draws of the marginalised model: each draw gets a component
   (exactly ``round(P(component | y) x draws)`` per chain, at random
   positions), hence a family, the parameters of that component's
   conditional draw, and prior draws for the other families' shape
   parameters; ``family_prob`` holds the per-draw ``P(k | y, params)``
   (Rao-Blackwellised, as ``pymc-extras`` recovers marginalised variables)
   and its mean is the posterior family probability.

All 84 subject-model pairs of the study converge this way with default
settings (``models/sampling/convergence.csv``), and their family
probabilities and posterior means agree with the fine-grid posterior of
:mod:`ibo_pymc.model.fine_grid` (``models/sampling/fine_grid_validation.csv``).

The result is an :class:`arviz.InferenceData` with groups ``posterior``,
``conditional_posterior`` (the NUTS draws per component, dim ``component``), ``log_likelihood``,
``posterior_predictive``, ``observed_data``, ``constant_data`` and
``sample_stats``. The attrs hold subject, model, package version, the full
configuration, the family evidences and the diagnostics, so
:meth:`IBOModel.load` rebuilds the model from a saved file.

The jobs live in their own modules; this one orchestrates them:
:mod:`~ibo_pymc.model.config` (:class:`FitConfig`: variant, sampler, convergence
policy, tables; its hash), :mod:`~ibo_pymc.model.samplers` (the nutpie and
``pm.sample`` back ends), :mod:`~ibo_pymc.model.strata` (where to split a
multimodal component), :mod:`~ibo_pymc.model.evidence` (bridge sampling) and
:mod:`~ibo_pymc.model.diagnostics` (R-hat/ESS tables, summaries).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.data.rounds import SubjectObservations
from ibo_pymc.errors import InputError
from ibo_pymc.forward.acquisition import get_family
from ibo_pymc.forward.argmax import TABLE_FORMAT, load_tables
from ibo_pymc.forward.variants import (
    UniformPrior,
    get_variant,
    log_density_unconstrained,
)
from ibo_pymc.model import pointwise
from ibo_pymc.model.builder import (
    Component,
    SubjectData,
    build_model,
    split_component,
    whole_families,
)
from ibo_pymc.model.config import SAMPLERS, FitConfig, config_difference, fit_file_name
from ibo_pymc.model.diagnostics import (
    converged,
    diagnostics,
    failing_quantities,
    summary,
)
from ibo_pymc.model.evidence import bridge_sampling
from ibo_pymc.model.likelihood import wc_mixture_random
from ibo_pymc.model.samplers import BACKENDS
from ibo_pymc.model.strata import split_point

#: 3: per-component evidences, probabilities and diagnostics as the group ``component_evidence``
FORMAT = 3


def _logit(v, lo, hi):
    return UniformPrior(lo, hi).to_unconstrained(v)


def _expit(z, lo, hi):
    return UniformPrior(lo, hi).from_unconstrained(z)


def _internal(name: str) -> str:
    """The key of a free tau among a component's columns: ũ's single tau is kept as ``tau_pos``."""
    return "tau_pos" if name == "tau" else name


class IBOModel:
    """Inverse Bayesian optimisation for one subject: build, fit, summarise, save, load.

    >>> m = IBOModel(data.observations(28), model="tau_pm", seed=1)   # doctest: +SKIP
    >>> idata = m.fit()                                                # doctest: +SKIP
    >>> m.family_probabilities()                                       # doctest: +SKIP
    """

    def __init__(self, observations: SubjectObservations, model: str | None = None, config: FitConfig | None = None, **kw):
        """``model`` and keyword settings (draws, seed, ...) override ``config`` (default ``FitConfig()``)."""
        if model is not None:
            kw["model"] = model
        config = dataclasses.replace(config, **kw) if config is not None else FitConfig(**kw)
        self.config = config
        self.variant = get_variant(config.model)
        self.obs = observations
        if observations.n_rounds == 0:
            raise InputError(f"subject {observations.subject} has no eligible rounds to fit", field="subject")
        self.tables = load_tables(config.tables)
        self.sd = SubjectData.prepare(observations, config.model, self.tables)
        self.idata = None

    # --- model -------------------------------------------------------------------
    @property
    def families(self) -> tuple[str, ...]:
        return self.sd.families

    def build(self, layout: str = "marginal"):
        """The PyMC model (``marginal``: the paper's model; ``stacked``: conditionals side by side)."""
        return build_model(self.sd, layout=layout)

    def _blocks(self, components):
        from ibo_pymc.model.compiled import blocks_for

        return blocks_for(self.config.model, components, "stacked")

    # --- fitting -----------------------------------------------------------------
    def fit(self, progress: bool = True):
        """Sample, check convergence, and return the InferenceData (also kept as ``self.idata``)."""
        from ibo_pymc.grid.engine import GridConfig, fit_grid

        cfg = self.config
        ss = np.random.SeedSequence(cfg.seed)
        s_init, s_sampler, s_bridge, s_mix, s_ppc = ss.spawn(5)
        grid = fit_grid(self.obs.delta_r1, self.obs.theta2, cfg.model, config=GridConfig(tables=cfg.tables), tables=self.tables)
        sampler_seed = int(s_sampler.generate_state(1, np.uint32)[0])
        comps = whole_families(self.families)
        thin = 1
        while True:
            inits = self._initial_points(grid, comps, np.random.default_rng(s_init))
            cond, stats = self._sample(comps, inits, cfg.draws * thin, sampler_seed, progress)
            cond = {k: v[:, thin - 1 :: thin] for k, v in cond.items()}
            stats = stats.isel(draw=slice(thin - 1, None, thin))
            evid = self._evidence(comps, cond, np.random.default_rng(s_bridge))
            probs = _softmax(np.array([e.log_evidence + c.log_width_fraction for e, c in zip(evid, comps)]))
            diag = self._conditional_diagnostics(comps, cond)
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
                print(f"  not yet converged ({labels}); sampling again, keeping every {thin}th draw")
        self.idata = self._assemble(
            comps, cond, stats, evid, probs, diag, thin, np.random.default_rng(s_mix), np.random.default_rng(s_ppc)
        )
        return self.idata

    def _stratify(self, comps, cond, failing):
        """Split the first failing, multimodal component at its density minimum (or None)."""
        for i in failing:
            c = comps[i]
            if sum(q.family == c.family for q in comps) >= self.config.max_strata:
                continue
            d = self._component_draws(comps, cond, i)
            cols = self._columns(c)
            found = split_point({self._limit_name(key): d[key] for key, _, _ in cols}, {self._limit_name(key): (lo, hi) for key, lo, hi in cols})
            if found is not None:
                return split_component(comps, i, *found)
        return None

    def _initial_points(self, grid, comps, rng: np.random.Generator, n: int = 256) -> np.ndarray:
        """Chain starts (unconstrained, stacked layout) drawn from the grid posterior."""
        from ibo_pymc.grid.engine import sample_cells

        w0 = float(np.clip(grid.w_em, 0.05, 0.95))
        per_comp = [sample_cells(grid, n, rng, c.family, param_range=c.bounds("param")) for c in comps]
        cols = []
        for b in self._blocks(comps):
            if b.code == 0:
                cols.append(_logit(per_comp[b.component]["param"], b.lo[0], b.hi[0])[:, None])
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
                vals.append(_logit(v, lo, hi))
            cols.append(np.stack(vals, axis=1))
        return np.concatenate(cols, axis=1)

    def _sample(self, comps, inits, draws, seed, progress):
        """Conditional draws {name: (chain, draw[, component])} and sample_stats."""
        cfg = self.config
        cores = cfg.cores or min(cfg.chains, os.cpu_count() or 1)
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
            lo, hi = np.array(b.lo), np.array(b.hi)
            v = _expit(z[j : j + b.size], lo, hi)
            out[b.name] = float(v[0]) if b.size == 1 else v
            j += b.size
        return out

    # --- per-component quantities -----------------------------------------------------------
    def _columns(self, c: Component) -> list[tuple[str, float, float]]:
        """A component's free parameters (key, prior interval); ũ's one tau is keyed ``tau_pos``."""
        taus = tuple(_internal(n) for n in self.variant.taus)
        return [(key, *c.bounds(self._limit_name(key))) for key in ("param", "gamma", "w", *taus)]

    def _limit_name(self, key: str) -> str:
        """The model's name of a column (ũ's single tau is stored as ``tau_pos``)."""
        return "tau" if key == "tau_pos" and self.variant.taus == ("tau",) else key

    def _with_taus(self, d: dict) -> dict:
        """Fill in tau_neg and tau_pos where the model ties them (ũ) or fixes them at 0 (u)."""
        if not self.variant.augmented:
            d["tau_neg"] = d["tau_pos"] = np.zeros_like(d["gamma"])
        elif not self.variant.split_by_sign:
            d["tau_neg"] = d["tau_pos"]
        return d

    def _component_draws(self, comps, cond: dict, k: int) -> dict:
        """Constrained draws (chain, draw) of component k's conditional posterior."""
        out = {"param": cond[comps[k].var_name], "gamma": cond["gamma"][..., k], "w": cond["w"][..., k]}
        for name in self.variant.taus:
            out[_internal(name)] = cond[name][..., k]
        return self._with_taus(out)

    def _unconstrained(self, c: Component, d: dict) -> np.ndarray:
        return np.stack([_logit(d[key], lo, hi) for key, lo, hi in self._columns(c)], axis=-1)

    def _from_unconstrained(self, c: Component, z: np.ndarray) -> dict:
        d = {key: _expit(z[:, j], lo, hi) for j, (key, lo, hi) in enumerate(self._columns(c))}
        return self._with_taus(d)

    def _loglik_sum(self, family: str, d: dict) -> np.ndarray:
        return pointwise.loglik(self.sd, family, d["param"], d["tau_neg"], d["tau_pos"], d["gamma"], d["w"]).sum(-1)

    def _evidence(self, comps, cond: dict, rng: np.random.Generator):
        """Bridge-sampling evidence of each component under its own (restricted) uniform prior."""
        import arviz as az

        out = []
        for k, c in enumerate(comps):
            d = self._component_draws(comps, cond, k)
            z = self._unconstrained(c, d)

            def log_density(zz, c=c):
                return self._loglik_sum(c.family, self._from_unconstrained(c, zz)) + log_density_unconstrained(zz).sum(-1)

            half = z.shape[1] // 2
            ess = min(float(az.ess(z[:, half:, j])) for j in range(z.shape[-1]))
            out.append(bridge_sampling(z, log_density, rng, n_eff=ess))
        return out

    def _conditional_diagnostics(self, comps, cond: dict) -> dict:
        import arviz as az

        out = {}
        for k, c in enumerate(comps):
            d = self._component_draws(comps, cond, k)
            names = [key for key, _, _ in self._columns(c)]
            r = [float(az.rhat(d[n])) for n in names]
            eb = [float(az.ess(d[n], method="bulk")) for n in names]
            et = [float(az.ess(d[n], method="tail")) for n in names]
            out[c.label] = {"r_hat": max(r), "ess_bulk": min(eb), "ess_tail": min(et)}
        return out

    # --- assembly ------------------------------------------------------------------------
    def _assemble(self, comps, cond, stats, evid, probs, diag, thin, rng_mix, rng_ppc):
        import arviz as az

        from ibo_pymc import __version__

        cfg = self.config
        fams = self.families
        F = len(fams)
        C, D = cond["gamma"].shape[:2]
        # component of each draw: exactly round(P * D) per chain (largest remainder), random positions
        counts = _largest_remainder(probs, D)
        comp = np.stack([rng_mix.permutation(np.repeat(np.arange(len(comps)), counts)) for _ in range(C)])
        comp_family = np.array([fams.index(c.family) for c in comps])
        family = comp_family[comp]
        per = [self._component_draws(comps, cond, k) for k in range(len(comps))]
        shared = {}
        for n in ("gamma", "w", "tau_neg", "tau_pos"):
            shared[n] = np.choose(comp, [p[n] for p in per])
        own = np.choose(comp, [p["param"] for p in per])
        params = {}
        for k, f in enumerate(fams):
            lo, hi = get_family(f).bounds
            prior = rng_mix.uniform(lo, hi, size=(C, D))
            params[k] = np.where(family == k, own, prior)
        family_probs = np.bincount(comp_family, weights=probs, minlength=F)
        # pointwise log-likelihood of every family at every draw's parameters
        ll = np.stack(
            [
                pointwise.loglik(self.sd, f, params[k], shared["tau_neg"], shared["tau_pos"], shared["gamma"], shared["w"])
                for k, f in enumerate(fams)
            ]
        )  # (F, C, D, N), internal order
        tot = ll.sum(-1)
        family_prob = np.moveaxis(_softmax(tot, axis=0), 0, -1)  # (C, D, F)
        ll_draw = np.take_along_axis(ll, family[None, :, :, None], axis=0)[0]
        # posterior predictive theta2 under each draw's family
        ts = np.zeros((C, D, self.sd.obs.n_rounds))
        for k, f in enumerate(fams):
            mask = family == k
            if mask.any():
                ts[mask] = pointwise.theta_star(self.sd, f, params[k][mask], shared["tau_neg"][mask], shared["tau_pos"][mask])
        ppc = wc_mixture_random(ts, shared["gamma"][..., None], shared["w"][..., None], rng=rng_ppc)

        coords = {"chain": np.arange(C), "draw": np.arange(D), "family": list(fams), "round": np.asarray(self.obs.session_id)}
        post = {get_family(f).var_name: (("chain", "draw"), params[k]) for k, f in enumerate(fams)}
        post["gamma"] = (("chain", "draw"), shared["gamma"])
        post["w"] = (("chain", "draw"), shared["w"])
        for name in self.variant.taus:
            post[name] = (("chain", "draw"), shared[_internal(name)])
        # the family of each draw; named family_draw because "family" is the dim of family_prob
        post["family_draw"] = (("chain", "draw"), family.astype(np.int64), {"labels": ",".join(fams)})
        post["family_prob"] = (("chain", "draw", "family"), family_prob)
        posterior = xr.Dataset(post, coords={k: coords[k] for k in ("chain", "draw", "family")})

        cpost = {}
        for name, arr in cond.items():
            dims = ("chain", "draw", "component") if arr.ndim == 3 else ("chain", "draw")
            cpost[name] = (dims, arr)
        ccoords = {k: coords[k] for k in ("chain", "draw")}
        ccoords["component"] = [c.label for c in comps]
        conditional = xr.Dataset(cpost, coords=ccoords)
        conditional.attrs["note"] = (
            "NUTS draws of each component's conditional posterior p(params | theta2, family, stratum)"
        )

        rc = {k: coords[k] for k in ("chain", "draw", "round")}
        log_lik = xr.Dataset({"theta2": (("chain", "draw", "round"), self.sd.to_subject_order(ll_draw))}, coords=rc)
        ppc_ds = xr.Dataset({"theta2": (("chain", "draw", "round"), self.sd.to_subject_order(ppc))}, coords=rc)
        obs_ds = xr.Dataset({"theta2": ("round", np.asarray(self.obs.theta2, float))}, coords={"round": coords["round"]})
        const = xr.Dataset(
            {
                "delta_r1": ("round", np.asarray(self.obs.delta_r1, float)),
                "round_index": ("round", np.asarray(self.obs.round_index)),
            },
            coords={"round": coords["round"]},
        )
        stats = stats.assign_coords(chain=coords["chain"], draw=coords["draw"])
        attrs = {
            "ibo_pymc_format": FORMAT,
            "table_format": TABLE_FORMAT,
            "ibo_pymc_version": __version__,
            "subject": int(self.obs.subject),
            "user_id": int(self.obs.user_id),
            "model": cfg.model,
            "config": json.dumps(cfg.to_dict()),
            "config_hash": cfg.key(),
            "thin": int(thin),
            "components": json.dumps([c.to_dict() | {"label": c.label, "var_name": c.var_name} for c in comps]),
        }
        log_ev = [e.log_evidence + c.log_width_fraction for c, e in zip(comps, evid)]
        evidence = xr.Dataset(
            {
                "component_family": ("component", [c.family for c in comps]),
                "log_evidence": ("component", np.array(log_ev, float)),
                "log_evidence_rel_error": ("component", np.array([e.rel_error for e in evid], float)),
                "probability": ("component", np.asarray(probs, float)),
                "r_hat": ("component", np.array([diag[c.label]["r_hat"] for c in comps], float)),
                "ess_bulk": ("component", np.array([diag[c.label]["ess_bulk"] for c in comps], float)),
                "ess_tail": ("component", np.array([diag[c.label]["ess_tail"] for c in comps], float)),
                "family_log_evidence": ("family", np.array(
                    [_logsumexp([v for c, v in zip(comps, log_ev) if c.family == f]) for f in fams], float)),
                "family_probability": ("family", np.asarray(family_probs, float)),
            },
            coords={"component": [c.label for c in comps], "family": list(fams)},
        )
        evidence.attrs["note"] = (
            "per component (a family, or a stratum of one): bridge-sampled log evidence under its uniform prior "
            "(strata weighted by their share of the prior volume), its relative error, posterior probability, and "
            "the worst R-hat / smallest ESS of its conditional NUTS draws"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = az.InferenceData(
                posterior=posterior,
                conditional_posterior=conditional,
                log_likelihood=log_lik,
                posterior_predictive=ppc_ds,
                observed_data=obs_ds,
                constant_data=const,
                sample_stats=stats,
                component_evidence=evidence,
            )
        for g in idata.groups():
            idata[g].attrs.update(attrs)
        return idata

    # --- results ---------------------------------------------------------------------------
    def _need_fit(self):
        if self.idata is None:
            raise RuntimeError("fit the model first (IBOModel.fit) or load a saved fit (IBOModel.load)")
        return self.idata

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
        from ibo_pymc.io import atomic_path

        idata = self._need_fit()
        path = Path(path)
        with atomic_path(path) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata.to_netcdf(str(tmp), engine="h5netcdf")
        return path

    @classmethod
    def load(cls, path, *, config: FitConfig | None = None) -> IBOModel:
        """Reload a saved fit and rebuild its model (data, configuration, tables).

        With ``config``, a fit made with any other configuration is refused
        (:class:`~ibo_pymc.errors.InputError` naming both hashes).
        """
        import arviz as az

        path = Path(path)
        if not path.is_file():
            raise InputError("no such file; expected a NetCDF written by ibo-sample", path=path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = az.from_netcdf(str(path), engine="h5netcdf")
                idata.load()
        except Exception as exc:  # noqa: BLE001 - any reader failure means a bad file
            raise InputError(f"cannot read NetCDF ({type(exc).__name__}); expected a fit written by ibo-sample", path=path) from None
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


def _logsumexp(a) -> float:
    a = np.asarray(a, float)
    m = a.max()
    return float(m + np.log(np.exp(a - m).sum()))


def _softmax(a, axis=-1):
    a = np.asarray(a, float)
    m = np.max(a, axis=axis, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=axis, keepdims=True)


def _largest_remainder(p, n: int) -> np.ndarray:
    raw = np.asarray(p, float) * n
    base = np.floor(raw).astype(int)
    short = n - base.sum()
    if short > 0:
        base[np.argsort(-(raw - base), kind="stable")[:short]] += 1
    return base


__all__ = ["SAMPLERS", "FitConfig", "IBOModel", "diagnostics", "failing_quantities", "fit_file_name", "split_point",
           "summary"]
