"""The model class every task's model derives from: fitting, results, LOO, saving and loading are written once here.

A task's model (:class:`IBOModelBase` subclass) says only what differs from task to task:

============================  ==========================================================================
hook                          what it gives
============================  ==========================================================================
``task``, ``observed``        the task's registry name; the name of the observed quantity (the
                              ``log_likelihood`` variable)
``config_class``              its configuration (an :class:`~ibo_pymc.engine.config.EngineConfig`
                              subclass: what the model is, and the engine's settings)
``families``                  the acquisition families whose choice is marginalised
``priors(family)``            the family's parameters and their priors, in the unconstrained order
``density(family)``           the family's log-density on the unconstrained scale
                              (:class:`~ibo_pymc.engine.density.Density`)
``loglik(family, params)``    the log-likelihood per observation unit at many parameter points
``unit_coords()``             the observation unit's dim and labels (e.g. ``round``, the round numbers)
``data_groups()``             ``observed_data`` (and ``constant_data``) as the task lays them out
``fit_attrs()``               ``subject``, ``model`` and the task's own attrs of a saved fit
``from_fit(idata)``           (classmethod) the observations a saved fit was made from
``select_units(keep)``        the observations restricted to some units (exact leave-one-out refits)
``file_name()``               the default file name of the fit
============================  ==========================================================================

The engine (:mod:`ibo_pymc.engine.fitting`, :mod:`ibo_pymc.engine.assembly`) does the rest, the same way for every
task, and writes the fit schema (:mod:`.schema`). ``seed_entropy()`` may be overridden so that a cohort's subjects get
independent streams from one seed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.engine.config import HDI_PROB, EngineConfig
from ibo_pymc.errors import InputError

#: the entropy word that makes the posterior predictive's seed stream differ from the fit's
PREDICTIVE_STREAM = 0x50504344


class _LoglikAt:
    """One family's log-likelihood per unit at many unconstrained points ``zz`` (n, dim), and its log-density
    there, from one evaluation of the likelihood.

    Moment matching (:func:`~ibo_pymc.engine.loo.psis_components`) asks for the density and then one unit's
    log-likelihood at the same moved draws; each is a full pass of the likelihood over the draws (for the grid
    task's GP, a posterior per draw and decision). The model of this base class is the likelihood times the
    priors, so the density is the units' log-likelihood summed plus each parameter's prior log-density on the
    unconstrained scale (Jacobian included): computing it so, with the last points' log-likelihood kept, serves
    the second request from the first. (:meth:`IBOModelBase.density` is the same function, compiled for NUTS;
    a test holds the two equal.)"""

    def __init__(self, model, family: str):
        self.model, self.family = model, family
        self.priors = model.priors(family)
        self._z = self._ll = None

    def loglik(self, zz: np.ndarray) -> np.ndarray:
        if self._z is None or self._z.shape != zz.shape or not np.array_equal(self._z, zz):
            params = {n: p.from_unconstrained(zz[:, j]) for j, (n, p) in enumerate(self.priors.items())}
            self._ll = np.asarray(self.model.loglik(self.family, params), float)
            self._z = np.array(zz, copy=True)
        return self._ll

    def log_density(self, zz: np.ndarray) -> np.ndarray:
        prior = sum(p.log_density_unconstrained(zz[:, j]) for j, p in enumerate(self.priors.values()))
        return self.loglik(zz).sum(axis=-1) + prior


class IBOModelBase:
    """Inverse Bayesian optimisation of one subject: fit, family probabilities, summary, diagnostics, LOO,
    save and load (module docstring for what a task supplies).

    >>> m = SomeTaskModel(observations, draws=1000, seed=1)  # doctest: +SKIP
    >>> idata = m.fit()  # doctest: +SKIP
    >>> m.family_probabilities()
    ... m.summary()
    ... m.loo()  # doctest: +SKIP
    """

    task: ClassVar[str] = ""
    observed: ClassVar[str] = ""
    config_class: ClassVar[type] = EngineConfig
    #: what the task's data calls one person (in messages)
    unit_name: ClassVar[str] = "subject"

    def __new__(cls, observations=None, *args, hierarchical: bool = False, **settings):
        if hierarchical:  # several subjects with partial pooling: the engine's hierarchical model of this model
            from ibo_pymc.engine.hierarchical import HierarchicalModel

            return HierarchicalModel(cls, observations, *args, **settings)
        return super().__new__(cls)

    def __init__(self, observations, config: EngineConfig | None = None, *, hierarchical: bool = False, **settings):
        """``settings`` (draws, seed, ...) override ``config`` (default: the task's default configuration).
        ``hierarchical=True`` with a list of subjects' observations (or a data set) builds the hierarchical
        model of them instead (:class:`~ibo_pymc.engine.hierarchical.HierarchicalModel`; its own settings
        ``population_draws``, ``population_tune``, ``population_chains``, ``n_draws``, ``target_accept``)."""
        config = config if config is not None else self.config_class()
        if not isinstance(config, self.config_class):
            raise InputError(f"expected a {self.config_class.__name__}, got a {type(config).__name__}", field="config")
        self.config = config.replace(**settings) if settings else config
        self.obs = observations
        self.idata = None

    # --- what a task supplies ------------------------------------------------------------------
    @property
    def families(self) -> tuple[str, ...]:
        return tuple(self.config.families)

    def priors(self, family: str) -> dict:
        raise NotImplementedError

    def density(self, family: str):
        raise NotImplementedError

    def loglik(self, family: str, params: dict) -> np.ndarray:
        raise NotImplementedError

    def unit_coords(self) -> tuple[str, list]:
        raise NotImplementedError

    def data_groups(self) -> dict:
        raise NotImplementedError

    def fit_attrs(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_fit(cls, idata):
        raise NotImplementedError

    def select_units(self, keep: np.ndarray):
        """The observations of the units where ``keep`` (a boolean mask over :meth:`unit_coords`) holds."""
        raise NotImplementedError

    def file_name(self) -> str:
        return f"{self.task}-{int(self.fit_attrs()['subject']):03d}.nc"

    def seed_entropy(self) -> list[int]:
        """What seeds the fit: the configuration's seed and the subject (so subjects' streams differ)."""
        return [int(self.config.seed), int(self.fit_attrs()["subject"])]

    # --- fitting ---------------------------------------------------------------------------------
    def fit(self, progress: bool = False, *, cores: int | None = None):
        """Fit every family (the engine's loop, :func:`~ibo_pymc.engine.fitting.fit_components`, on the model's
        :meth:`sampling_plan`), assemble the marginal posterior, and return the InferenceData (kept as
        ``idata``). ``progress``: a line on stderr as each family is fitted; ``cores``: threads for the chains
        (default: the configuration's); it changes the speed, not the draws."""
        from ibo_pymc.engine.fitting import fit_components

        plan = self.sampling_plan(progress=progress, cores=cores)
        comps, fits, probabilities = fit_components(plan, self.config, progress=progress)
        self.idata = self.assemble(plan, comps, fits, probabilities)
        return self.idata

    def sampling_plan(self, *, progress: bool = False, cores: int | None = None):
        """How the fit's components are sampled (:class:`~ibo_pymc.engine.fitting.SamplingPlan`): by default
        every family on its own NUTS run after Laplace screening (:class:`~ibo_pymc.engine.fitting.PerFamily`)."""
        from ibo_pymc.engine.fitting import PerFamily

        return PerFamily(self, self.config if cores is None else self.config.replace(cores=cores), progress=progress)

    def assemble(self, plan, comps, fits, probabilities):
        """The fit's InferenceData from the components' fits, strata merged into their families
        (:meth:`~ibo_pymc.engine.fitting.SamplingPlan.merge`, :func:`ibo_pymc.engine.assembly.assemble`)."""
        from ibo_pymc.engine.assembly import assemble

        return assemble(self, plan.merge(comps, fits, probabilities), np.random.default_rng(plan.assembly_seed()))

    def _need_fit(self):
        if self.idata is None:
            raise RuntimeError(
                f"fit the model first ({type(self).__name__}.fit) or load a saved fit ({type(self).__name__}.load)"
            )
        return self.idata

    # --- results ---------------------------------------------------------------------------------
    def family_probabilities(self) -> pd.Series:
        """Posterior probability of each family, ``P(family | data)`` (from the families' evidences)."""
        from ibo_pymc.engine.results import family_table

        return family_table(self._need_fit())["probability"].rename("probability")

    def diagnostics(self) -> pd.DataFrame:
        """Per component: probability, worst R-hat, smallest bulk and tail ESS, divergences, how its evidence
        was obtained, the thinning, whether convergence is required (probability >= ``relevance``) and met."""
        ev = self._need_fit()["component_evidence"]
        df = pd.DataFrame(
            {
                v: ev[v].values
                for v in (
                    "component_family",
                    "probability",
                    "r_hat",
                    "ess_bulk",
                    "ess_tail",
                    "divergences",
                    "method",
                    "thin",
                )
                if v in ev
            },
            index=pd.Index([str(c) for c in ev["component"].values], name="component"),
        )
        from ibo_pymc.engine.fitting import meets_targets

        cfg = self.config
        df["required"] = df["probability"] >= cfg.relevance
        ok = meets_targets(df["r_hat"], df["ess_bulk"], df["ess_tail"], cfg)
        df["converged"] = ~df["required"] | (ok & (df.get("method", "bridge") == "bridge"))
        return df

    def converged(self) -> bool:
        """Whether every component whose probability reaches ``relevance`` meets the convergence targets."""
        return bool(self.diagnostics()["converged"].all())

    def failing(self) -> list[str]:
        """The rows of :meth:`diagnostics` (components, or a task's quantities) that miss the convergence
        targets although their convergence is required."""
        diag = self.diagnostics()
        return [str(q) for q in diag.index[~diag["converged"]]]

    def report(self, elapsed: float | None = None, hdi_prob: float = HDI_PROB) -> str:
        """The fit in words, as ``ibo-sample`` prints it: family probabilities, the summary of the families
        whose probability reaches ``relevance`` (HDIs of mass ``hdi_prob``), and the convergence of the
        components that must converge."""
        attrs = self.fit_attrs()
        label = ", ".join(str(v) for k, v in attrs.items() if k not in ("subject", "model")) or attrs.get("model", "")
        probs = self.family_probabilities()
        summ = self.summary(hdi_prob)
        summ = summ[summ["probability"] >= self.config.relevance]
        diag = self.diagnostics()
        req = diag[diag["required"]]
        with pd.option_context("display.width", 140):
            table = summ.to_string(index=False, float_format=lambda v: f"{v:.3f}")
        return "\n".join(
            [
                f"\n{self.unit_name} {attrs['subject']}, {label}"
                + (f": {elapsed:.1f} s" if elapsed is not None else ""),
                "posterior family probabilities: " + ", ".join(f"{f} {p:.3f}" for f, p in probs.items()),
                table,
                f"R-hat max {req['r_hat'].max():.3f}, bulk ESS min {req['ess_bulk'].min():.0f}, tail ESS min "
                f"{req['ess_tail'].min():.0f}, divergences {int(diag['divergences'].sum())} (families with probability "
                f">= {self.config.relevance})",
            ]
        )

    def summary(self, hdi_prob: float = HDI_PROB) -> pd.DataFrame:
        """Per family with its probability, each parameter's conditional posterior mean, sd and HDI; a last
        block ``marginal`` for the family-marginalised draws of the parameters every family has."""
        import arviz as az

        from ibo_pymc.engine.results import conditional

        idata = self._need_fit()
        probs = self.family_probabilities()
        rows = [
            _row(fam, float(probs[fam]), n, conditional(idata, fam, n).values.ravel(), hdi_prob, az)
            for fam in self.families
            for n in self.priors(fam)
        ]
        rows += [
            _row("marginal", 1.0, n, idata.posterior[n].values.ravel(), hdi_prob, az) for n in self._shared_parameters()
        ]
        return pd.DataFrame(rows)

    def _shared_parameters(self) -> list[str]:
        """The parameters every family has (their family-marginalised draws are summarised and drawn)."""
        return [n for n in self.priors(self.families[0]) if all(n in self.priors(f) for f in self.families)]

    def loo(self, method: str = "reliable", *, log=None):
        """PSIS-LOO over the observation units. ``reliable`` (default): the three tiers of
        :mod:`ibo_pymc.engine.loo` (PSIS per family, moment matching, exact refits of the units still at
        Pareto k > 0.7), with the number of refitted units as the entry ``n_refit``; ``psis``: plain
        ``arviz.loo`` on the pooled draws."""
        import arviz as az

        from ibo_pymc.engine.loo import quiet_pareto, reliable_loo

        idata = self._need_fit()
        if method == "psis":
            with quiet_pareto():
                return az.loo(idata, var_name=self.observed, pointwise=True)
        if method != "reliable":
            raise InputError(f"expected 'reliable' or 'psis', got {method!r}", field="method")
        loo, n_refit = reliable_loo(self, log=log)
        loo["n_refit"] = n_refit
        return loo

    def subject_draws(self, n_draws: int = 500, *, drop_below: float = 40.0):
        """What the hierarchical model takes of this subject's fit
        (:class:`~ibo_pymc.engine.hierarchical.SubjectDraws`):
        ``n_draws`` conditional draws of each family, families more than ``drop_below`` nats of evidence below
        the best left out."""
        from ibo_pymc.engine.hierarchical import default_subject_draws

        return default_subject_draws(self, n_draws, drop_below=drop_below)

    def hierarchical_loglik(self, family: str, params: dict) -> np.ndarray:
        """The log-likelihood, summed over the observation units, at draws ``params`` ({name: (M,)} on the
        parameters' own scales) of ``family``: what the hierarchical model's refinement weighs its proposal
        draws by (:mod:`~ibo_pymc.engine.proposal`). Default: :meth:`loglik` summed; a task whose model has no
        :meth:`loglik` overrides it."""
        return np.asarray(self.loglik(family, params), float).sum(axis=-1)

    def component_draws(self) -> list:
        """Each family's conditional draws, log-likelihood and densities, as the engine's LOO takes them
        (:class:`ibo_pymc.engine.loo.ComponentDraws`)."""
        from ibo_pymc.engine.loo import ComponentDraws
        from ibo_pymc.engine.results import component_table, conditional

        idata = self._need_fit()
        probs = component_table(idata)["probability"]
        out = []
        for fam in self.families:
            at = _LoglikAt(self, fam)
            z = np.stack([p.to_unconstrained(conditional(idata, fam, n).values) for n, p in at.priors.items()], axis=-1)
            C, D = z.shape[:2]
            ll = at.loglik(z.reshape(C * D, -1)).reshape(C, D, -1)
            out.append(ComponentDraws(fam, float(probs[fam]), z, ll, at.log_density, at.loglik))
        return out

    def predictive_loglik(self, idata, observations) -> np.ndarray:
        """The log-likelihood of ``observations`` (e.g. held-out units) at every marginal draw of ``idata``,
        each draw under its own family: (draws, units)."""
        from ibo_pymc.engine.assembly import pointwise_loglik

        post = idata.posterior
        fams = post["family_draw"].attrs["labels"].split(",")
        names = {n for f in fams for n in self.priors(f)}
        flat = {n: post[n].values.ravel() for n in names}
        return pointwise_loglik(
            type(self)(observations, config=self.config), post["family_draw"].values.ravel(), flat, fams
        )

    def predict(self, family: str, params: dict, rng: np.random.Generator) -> dict:
        """Draws of the observed data at many parameter points of one family (``params``: name -> (n,)), each
        observation given the observed ones before it: ``{observed_data variable: (n, *its shape)}``. A task
        that supplies it gets :meth:`posterior_predictive`."""
        raise NotImplementedError(f"{type(self).__name__} draws no posterior predictive (it has no predict hook)")

    def posterior_predictive(self, *, seed: int | None = None):
        """The observed data drawn at every posterior draw, each under its draw's family, as the group
        ``posterior_predictive`` of the fit (dims as ``observed_data``; added to ``idata``) and returned.

        A saved fit does not hold it unless saved with ``full=True`` (:meth:`save`): it is as large as the
        log-likelihood and as cheap to draw again. ``seed``: None draws from the fit's own predictive stream
        (:meth:`predictive_rng`), so the same fit gives the same draws every time. A fit that holds the group
        drawn with this ``seed`` returns it as it is; one drawn with another seed is drawn again and replaced."""
        idata = self._need_fit()
        if "posterior_predictive" in idata.groups():
            if idata["posterior_predictive"].attrs.get("seed") == seed:
                return idata["posterior_predictive"]
            del idata["posterior_predictive"]
        rng = self.predictive_rng() if seed is None else np.random.default_rng(seed)
        out = self.draw_predictive(rng)
        post, obs = idata.posterior, idata["observed_data"]
        ds = xr.Dataset(
            {n: (("chain", "draw", *obs[n].dims), v) for n, v in out.items()},
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                **{d: obs[d].values for n in out for d in obs[n].dims},
            },
        )
        ds.attrs.update({k: v for k, v in post.attrs.items() if k in ("task", "subject", "model", "config_hash")})
        if seed is not None:
            ds.attrs["seed"] = seed
        idata.add_groups(posterior_predictive=ds)
        return idata["posterior_predictive"]

    def predictive_rng(self) -> np.random.Generator:
        """The fit's own posterior-predictive stream: a purpose of its own beside the fit's (so drawing the
        predictive never shifts any other stream), from :meth:`seed_entropy`."""
        return np.random.default_rng([*self.seed_entropy(), PREDICTIVE_STREAM])

    def draw_predictive(self, rng: np.random.Generator) -> dict:
        """``{observed_data variable: (chain, draw, *its dims)}`` drawn at the fit's posterior draws, each under
        its draw's family, by :meth:`predict`; a task whose simulator draws all families at once overrides it."""
        post = self._need_fit().posterior
        fams = post["family_draw"].attrs["labels"].split(",")
        family = post["family_draw"].values.ravel()
        names = {n for f in fams for n in self.priors(f)}
        flat = {n: post[n].values.ravel() for n in names}
        out = {}
        for k, f in enumerate(fams):
            sel = family == k
            if sel.any():
                for name, v in self.predict(f, {n: x[sel] for n, x in flat.items()}, rng).items():
                    out.setdefault(name, np.empty((family.size,) + v.shape[1:], v.dtype))[sel] = v
        C, D = post.sizes["chain"], post.sizes["draw"]
        return {n: v.reshape((C, D) + v.shape[1:]) for n, v in out.items()}

    def plot(self, *, hdi_prob: float = HDI_PROB):
        """The fit at a glance: the families' posterior probabilities and each shared parameter's
        family-marginalised posterior (one panel each); returns the figure."""
        import matplotlib.pyplot as plt

        idata = self._need_fit()
        probs = self.family_probabilities()
        shared = self._shared_parameters()
        fig, axes = plt.subplots(1, 1 + len(shared), figsize=(3.2 * (1 + len(shared)), 2.8), squeeze=False)
        ax = axes[0, 0]
        ax.bar(list(probs.index), probs.to_numpy(), color="0.4")
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", labelrotation=30 if len(probs) > 4 else 0)
        ax.set_ylabel("posterior probability")
        ax.set_title(f"subject {self.fit_attrs()['subject']}")
        for ax, n in zip(axes[0, 1:], shared):
            v = idata.posterior[n].values.ravel()
            ax.hist(v, bins=40, color="0.6")
            lo, hi = _hdi(v, hdi_prob)
            ax.axvline(lo, color="k", lw=0.8, ls="--")
            ax.axvline(hi, color="k", lw=0.8, ls="--")
            ax.set_xlabel(n)
            ax.set_yticks([])
        fig.tight_layout()
        return fig

    @classmethod
    def fit_or_load(cls, observations, config: EngineConfig | None, path):
        """The fit saved at ``path`` when it was made from the same observations with the same configuration
        (``cores`` aside, and the convergence budget where the fit used none of it:
        :meth:`~ibo_pymc.engine.config.EngineConfig.makes`); else a new fit, saved there (over a fit of another
        configuration or other data)."""
        from ibo_pymc.engine.schema import read_fit

        m = cls(observations, config)
        path = Path(path)
        if path.is_file():  # an unreadable file, or a fit of another task, is an error, not fitted over
            idata = read_fit(path)
            saved, _ = cls._saved(idata, path)
            if m.config.makes(saved, budget_used(idata, saved)) and all(
                g in idata.groups() and idata[g].equals(ds) for g, ds in m.data_groups().items()
            ):
                m.idata = _adopt(idata, m.config, saved)
                return m
        m.fit()
        m.save(path)
        return m

    # --- persistence -----------------------------------------------------------------------------
    def save(self, path=None, *, full: bool = False) -> Path:
        """Write the fit as NetCDF, atomically (default: :meth:`file_name` in the current folder).

        By default the file is compact (:func:`ibo_pymc.io.write_fit`): the log-likelihood packed in 16 bits,
        no posterior predictive (:meth:`posterior_predictive` draws it again). ``full=True`` keeps everything:
        the log-likelihood in float64 and the posterior predictive, drawn now where it was not yet."""
        from ibo_pymc.io import write_fit

        if full:
            try:
                self.posterior_predictive()
            except NotImplementedError:  # a task without a simulator has none to keep
                pass
        return write_fit(self._need_fit(), Path(path) if path is not None else Path(self.file_name()), full=full)

    @classmethod
    def load(cls, path, *, config: EngineConfig | None = None):
        """A saved fit with its model (observations and configuration rebuilt from the file); with ``config``,
        a fit made with any other configuration (but for an unused convergence budget)
        is refused (:class:`~ibo_pymc.errors.InputError` naming both
        hashes)."""
        from ibo_pymc.engine.schema import read_fit

        idata = read_fit(path)
        saved, observations = cls._saved(idata, path)
        if config is not None and not config.makes(saved, budget_used(idata, saved)):
            raise InputError(
                f"fitted with another configuration (hash {saved.key()}, expected {config.key()}); "
                "fit again or load it without a configuration",
                path=path,
                field="config",
            )
        m = cls(observations, config=saved if config is None else config)
        m.idata = _adopt(idata, m.config, saved)
        return m

    @classmethod
    def _saved(cls, idata, path):
        """A saved fit's configuration and observations; a fit of another task, or one whose attrs or data do
        not rebuild them, is an :class:`~ibo_pymc.errors.InputError` naming the file."""
        attrs = idata.posterior.attrs
        if attrs.get("task") != cls.task:
            raise InputError(f"a fit of the {attrs.get('task')!r} task, not of {cls.task!r}", path=path, field="task")
        try:
            return cls.config_class.from_dict(json.loads(attrs["config"])), cls.from_fit(idata)
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise InputError(
                f"malformed {cls.task} fit ({type(exc).__name__}: {exc})", path=path, field="config"
            ) from None


def _adopt(idata, config: EngineConfig, saved: EngineConfig):
    """A saved fit taken as the fit of ``config`` (the same but for a convergence budget it did not use): its
    attrs name ``config`` and its hash, as a fit made now would, and keep the saved hash as ``config_saved_hash``
    (in memory; the file is unchanged). So the exact refits of its LOO, and everything that reads the attrs,
    work with the configuration asked for."""
    if saved.key() == config.key():
        return idata
    attrs = {"config": config.to_json(), "config_hash": config.key(), "config_saved_hash": saved.key()}
    for g in idata.groups():
        idata[g].attrs.update(attrs)
    return idata


def budget_used(idata, config: EngineConfig) -> bool:
    """Whether a saved fit (made with ``config``) used, or lacked, its convergence budget: a component sampled
    again thinned, a family split into strata (the per-family plan's, merged into one row, or a task's own rows
    per stratum), or a component the loop required that still misses the targets (a larger budget would go on
    where this one stopped). A fit without the ``component_evidence`` group counts as having used it.
    (:meth:`~ibo_pymc.engine.config.EngineConfig.makes`)."""
    from ibo_pymc.engine.fitting import meets_targets

    if "component_evidence" not in idata.groups():
        return True
    ev = idata["component_evidence"]
    if "thin" in ev and (np.asarray(ev["thin"].values) > 1).any():
        return True
    fams = [str(f) for f in ev["component_family"].values]
    if len(set(fams)) < len(fams) or any(c.get("strata") for c in json.loads(ev.attrs.get("components", "[]"))):
        return True
    sampled = np.asarray(ev["method"].values) == "bridge" if "method" in ev else np.ones(len(fams), bool)
    for k in range(len(fams)):
        if sampled[k] and float(ev["probability"].values[k]) >= config.relevance:
            r, b, t = (float(ev[v].values[k]) for v in ("r_hat", "ess_bulk", "ess_tail"))
            if not meets_targets(r, b, t, config):
                return True
    return False


def _hdi(v, prob):
    import arviz as az

    lo, hi = az.hdi(np.asarray(v, float), hdi_prob=prob)
    return float(lo), float(hi)


def _row(family, probability, name, v, prob, az):
    lo, hi = _hdi(v, prob)
    return {
        "family": family,
        "probability": probability,
        "parameter": name,
        "mean": float(np.mean(v)),
        "sd": float(np.std(v)),
        "hdi_lower": lo,
        "hdi_upper": hi,
    }
