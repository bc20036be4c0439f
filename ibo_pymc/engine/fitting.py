"""The engine's fit: components sampled by NUTS, screened, split into strata, thinned, weighed by their evidence.

Why component by component: the family-marginalised posterior of a subject is
the mixture ``sum_k P(k | y) p(params | y, k)`` of the families' conditional
posteriors, and sampling the mixture directly fails where families overlap
(the same curve under two families joins their modes by ridges that chains
cannot cross). Each conditional posterior is a small, unimodal-enough problem
that NUTS handles well; its normalising constant ``p(y | k)`` (bridge
sampling, :mod:`ibo_pymc.engine.bridge`) gives ``P(k | y)``; the assembly (:mod:`ibo_pymc.engine.assembly`)
draws the marginal posterior from the pieces.

The loop (:func:`fit_components`, one for every task):

1. sample every component (a family; later perhaps a stratum of one) and
   estimate its evidence by bridge sampling;
2. check R-hat and bulk and tail ESS of every component whose posterior
   probability reaches ``relevance``;
3. a failing component whose draws show separated modes (a multimodal
   conditional posterior: chains cannot cross between the modes) is split
   there into two *strata* (:mod:`.strata`), each with its prior restricted to
   its side and weighted by its share of the prior volume, up to
   ``max_strata`` per family; otherwise it is sampled again ``thin`` = 2, 4,
   ... times longer keeping every ``thin``-th draw, up to ``max_thin``, going
   straight to the ``thin`` its ESS shortfall asks for (:func:`thinning_factor`).

How the components' runs are laid out is the model's :class:`SamplingPlan`:

* :class:`PerFamily` (the default): each family on its own NUTS run, started
  near its mode (L-BFGS from the priors' centre and one scale either side;
  inside a box of +-10 scales where the unbounded search strays where the
  density is undefined), after Laplace *screening*: a family whose Laplace
  evidence is more than ``screen`` nats below the best family's is not sampled
  (posterior probability below ``exp(-screen)``); its draws come from the
  Laplace normal. A rerun resamples only the failing families.
* a joint plan (the hotspot task's): all components side by side in one NUTS
  run, started from a cheap grid posterior; a split or a thinning reruns all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ibo_pymc.engine.bridge import bridge_from_draws
from ibo_pymc.engine.config import EngineConfig
from ibo_pymc.engine.density import Density


@dataclass
class ComponentFit:
    """One component's conditional posterior (a family, or a stratum of one): its draws in the layout of the
    plan that sampled them (per family: unconstrained (chain, draw, dim)), the sampler's statistics (None when
    screened), its evidence, how it was obtained, convergence, and the thinning it was sampled with."""

    component: object
    family: str
    label: str
    names: tuple
    draws: object
    stats: object
    thin: int
    method: str = "bridge"
    log_evidence: float = math.nan
    rel_error: float = math.nan
    r_hat: float = math.nan
    ess_bulk: float = math.nan
    ess_tail: float = math.nan
    divergences: int = 0
    #: the largest absolute difference between the log-density NUTS sampled and the exact one at the draws (NaN: not
    #: measured; 0: sampled exactly; :func:`sample_family`)
    sampling_error: float = math.nan
    #: a family split into strata: the strata's own fits (:meth:`PerFamily.merge`); None for a whole family
    strata: list | None = None
    #: log of a stratum's share of its family's prior (0 for a whole family)
    log_share: float = 0.0

    @property
    def sampled(self) -> bool:
        return self.method == "bridge"


def find_mode(density: Density, priors: dict) -> np.ndarray:
    """The density's mode on the unconstrained scale: L-BFGS from the priors' centre and one scale either
    side, the best of the three; within a box of +-10 scales where the unbounded search fails."""
    from scipy import optimize

    neg = _negative(density)
    center = np.array([p.center for p in priors.values()], float)
    scale = np.array([p.scale for p in priors.values()], float)
    box = list(zip(center - 10 * scale, center + 10 * scale))
    best = None
    for shift in (0.0, -1.0, 1.0):
        x0 = center + shift * scale
        try:
            r = optimize.minimize(neg, x0, jac=True, method="L-BFGS-B")
            if not np.isfinite(r.fun):
                raise FloatingPointError
        except (ZeroDivisionError, FloatingPointError):
            r = optimize.minimize(neg, x0, jac=True, method="L-BFGS-B", bounds=box)
        if best is None or r.fun < best.fun:
            best = r
    return best.x


def _negative(density: Density):
    """The density's negative value and gradient at one point: what L-BFGS minimises to find a mode."""

    def neg(x):
        v, g = density.value_and_grad(x)
        return -v, -g

    return neg


def laplace(density: Density, mode: np.ndarray, h: float = 1e-4) -> tuple[float, np.ndarray]:
    """Laplace log-evidence at ``mode`` and the covariance (Hessian by central differences of the gradient);
    ``-inf`` and the identity where the Hessian is not negative definite."""
    d = len(mode)
    H = np.empty((d, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = h
        H[:, j] = -(density.value_and_grad(mode + e)[1] - density.value_and_grad(mode - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    sign, logdet = np.linalg.slogdet(H)
    if sign <= 0:
        return -math.inf, np.eye(d)
    return density.value_and_grad(mode)[0] + 0.5 * d * math.log(2 * math.pi) - 0.5 * logdet, np.linalg.inv(H)


def diagnose(draws: np.ndarray, rhat_decimals: int | None = None) -> tuple[float, float, float]:
    """Worst R-hat, smallest bulk and tail ESS over the coordinates of draws (chain, draw, dim); R-hat and
    ESS are rounded to ``rhat_decimals`` when given (as ``arviz.summary`` reports them)."""
    from ibo_pymc.engine.convergence import ess_bulk, ess_tail, rhat

    axes = {"chain_axis": 0, "draw_axis": 1}
    # NaN propagates: a sampled coordinate without an R-hat or ESS never moved in any chain, and a component holding
    # one is not converged, whichever coordinate it is (Python's max and min would keep or drop it by position)
    r = float(np.max(rhat(draws, **axes)))
    bulk = float(np.min(ess_bulk(draws, **axes)))
    tail = float(np.min(ess_tail(draws, **axes)))
    if rhat_decimals is not None:
        r, bulk, tail = (round(v, rhat_decimals) for v in (r, bulk, tail))
    return r, bulk, tail


def meets_targets(r_hat, ess_bulk, ess_tail, config: EngineConfig):
    """Whether draws meet the convergence targets of ``config``: R-hat at most ``target_rhat``, bulk and tail
    ESS at least ``min_ess``. A missing value (NaN) misses its target. Numbers give a bool; arrays (the rows of a
    diagnostics table) an array of them: the one definition the fitting loop, the diagnostics tables and
    :func:`~ibo_pymc.engine.model.budget_used` share."""
    ok = (
        (np.asarray(r_hat, float) <= config.target_rhat)
        & (np.asarray(ess_bulk, float) >= config.min_ess)
        & (np.asarray(ess_tail, float) >= config.min_ess)
    )
    return bool(ok) if ok.ndim == 0 else ok


#: the largest absolute difference (nats) between the log-density NUTS sampled and the exact one at a family's draws
#: (:meth:`~ibo_pymc.engine.density.Density.sampling_error`) above which the family is sampled again exactly
SAMPLING_TOLERANCE = 0.01


def sample_family(density: Density, mode: np.ndarray, config: EngineConfig, seed: int, thin: int = 1):
    """NUTS draws (chain, draw, dim) of one family's conditional posterior on the unconstrained scale and the
    sampler's statistics; chains start at the mode plus N(0, 0.1^2) jitter. ``thin``: ``thin`` times the draws
    and tuning, every ``thin``-th draw kept.

    Where nutpie samples a cheaper approximation of the density, its distance from the density at the draws
    is in the statistics' ``sampling_error`` attribute; above :data:`SAMPLING_TOLERANCE` the family is sampled
    again with the density itself (same seed)."""
    draws, tune = config.draws * thin, config.tune * thin
    names = list(density.names)
    if config.sampler == "nutpie":
        from ibo_pymc.engine.samplers import nutpie_sample

        def initial_point(s):
            return mode + 0.1 * np.random.default_rng(s).standard_normal(len(mode))

        extra = {"low_rank_modified_mass_matrix": True} if config.mass_matrix == "low_rank" else {}
        error = math.nan
        for exact in (False, True):
            tr = nutpie_sample(
                density.nutpie_model(initial_point, exact=exact),
                draws=draws,
                tune=tune,
                chains=config.chains,
                cores=config.cores,
                seed=seed,
                progress_bar=False,
                target_accept=config.target_accept,
                **extra,
            )
            if thin > 1:
                tr = tr.isel(draw=slice(thin - 1, None, thin))
            X = np.stack([tr.posterior[n].values for n in names], axis=-1)
            if not np.isfinite(X).all():
                break
            error = 0.0 if exact else density.sampling_error(X.reshape(-1, len(names)))
            if error <= SAMPLING_TOLERANCE:
                break
        tr.sample_stats.attrs["sampling_error"] = error
    else:
        import logging

        import pymc as pm

        from ibo_pymc.engine.samplers import pymc_log_level

        rng = np.random.default_rng(seed)
        init = [{"z": mode + 0.1 * rng.standard_normal(len(mode))} for _ in range(config.chains)]
        with pymc_log_level(logging.ERROR), density.pymc_model():
            tr = pm.sample(
                draws,
                tune=tune,
                chains=config.chains,
                cores=config.cores or 1,
                random_seed=seed,
                initvals=init,
                progressbar=False,
                compute_convergence_checks=False,
                target_accept=config.target_accept,
            )
        if thin > 1:
            tr = tr.isel(draw=slice(thin - 1, None, thin))
        X = np.asarray(tr.posterior["z"].values, float)
    if X.shape[:2] != (config.chains, config.draws) or not np.isfinite(X).all():
        # on Ctrl-C the samplers stop and return what they have (nutpie pads with NaN): never keep that
        raise KeyboardInterrupt("sampling was interrupted")
    return X, tr.sample_stats


class SamplingPlan:
    """How a model's components are sampled: what the engine's loop (:func:`fit_components`) asks of a layout.

    The loop is the same for every task; a plan says how the components' NUTS runs are laid out and seeded.
    :class:`PerFamily` (the default of :meth:`~ibo_pymc.engine.model.IBOModelBase.sampling_plan`) samples
    every family on its own; a task may lay its components side by side in one joint run instead
    (``joint = True``: a rerun resamples all of them, with one thinning), as the hotspot task does.
    """

    #: whether the components are sampled in one run (a split or a thinning reruns all of them)
    joint: bool = False

    def components(self) -> list:
        """The components to start from (one per family)."""
        raise NotImplementedError

    def sample(self, comps: list, todo: list[int], thin: list[int]) -> dict[int, ComponentFit]:
        """Fits (draws, statistics, convergence; no evidence yet unless screened) of the components ``todo``,
        each with its ``thin``."""
        raise NotImplementedError

    def evidences(self, comps: list, fits: list, todo: list[int]) -> None:
        """Fill in ``log_evidence`` and ``rel_error`` of the sampled fits ``todo`` (bridge sampling)."""
        raise NotImplementedError

    def label(self, comp) -> str:
        """A component's name in messages and tables."""
        return str(comp)

    def log_share(self, comp) -> float:
        """log of a component's share of its family's prior (0 for a whole family; a stratum's is below)."""
        return 0.0

    def split(self, comps: list, i: int, fit: ComponentFit) -> list | None:
        """The components with ``comps[i]`` split into two strata where its draws show separated modes, or
        None (a plan that cannot restrict a prior never splits)."""
        return None

    def merge(self, comps: list, fits: list, probabilities) -> list:
        """The fits the assembly takes (one per family) from the components' fits and their probabilities (the
        loop's): the same list where no family was split."""
        return fits

    def log(self, message: str) -> None:
        import sys

        print(message, file=sys.stderr, flush=True)


def fit_components(plan: SamplingPlan, config, *, progress: bool = False):
    """The engine's loop: sample every component, weigh it by its evidence, and go on until every component
    whose probability reaches ``config.relevance`` meets the convergence targets.

    A failing component is first split into strata (at most ``config.max_strata`` per family) where its draws
    show separated modes (:func:`~ibo_pymc.engine.strata.split_point`), else sampled again ``thin`` = 2, 4,
    ... times longer keeping every ``thin``-th draw, up to ``config.max_thin``. Returns the components, their
    fits and their probabilities (``P(component | y)``, from the evidences and the components' prior shares).
    """
    from ibo_pymc.engine.mixing import softmax

    comps = list(plan.components())
    thin = [1] * len(comps)
    fits: list = [None] * len(comps)
    todo = list(range(len(comps)))
    max_strata = config.max_strata
    while True:
        for i, f in plan.sample(comps, todo, thin).items():
            fits[i] = f
        plan.evidences(comps, fits, [i for i in todo if fits[i].sampled])
        probs = softmax(np.array([f.log_evidence + plan.log_share(c) for f, c in zip(fits, comps)]))
        failing = [
            i
            for i, f in enumerate(fits)
            if f.sampled and probs[i] >= config.relevance and not meets_targets(f.r_hat, f.ess_bulk, f.ess_tail, config)
        ]
        if not failing:
            break
        split = _split(plan, comps, fits, failing, max_strata)
        if split is not None:
            i, new = split
            n = len(new) - len(comps)  # the split component's place now holds its strata
            thin = thin[:i] + [thin[i]] * (n + 1) + thin[i + 1 :]
            fits = fits[:i] + [None] * (n + 1) + fits[i + 1 :]
            comps = new
            todo = list(range(len(comps))) if plan.joint else list(range(i, i + n + 1))
            if progress:
                plan.log(
                    f"  multimodal; sampling the strata {', '.join(plan.label(c) for c in comps[i : i + n + 1])} "
                    "separately"
                )
            continue
        if plan.joint:
            todo = list(range(len(comps))) if thin[0] * 2 <= config.max_thin else []
        else:
            todo = [i for i in failing if thin[i] * 2 <= config.max_thin]
        if not todo:
            break
        factor = thinning_factor([fits[i] for i in failing], config)
        for i in todo:
            thin[i] = next_thin(thin[i], factor, config.max_thin)  # run longer, keep every thin-th draw
        if progress:
            nth = {2: "2nd", 3: "3rd"}.get(thin[todo[0]], f"{thin[todo[0]]}th")
            plan.log(
                f"  not yet converged ({', '.join(fits[i].label for i in failing)}); sampling again, "
                f"keeping every {nth} draw"
            )
    return comps, fits, probs


def thinning_factor(failing: list, config) -> int:
    """How many times longer the failing components are sampled again: the smallest power of two that covers
    their largest ESS shortfall (``min_ess`` over the smaller of bulk and tail ESS), at least 2.

    ESS grows about in proportion to the draws kept from a longer run, so a fit whose ESS is a fifth of the
    target goes straight to ``thin`` = 8 instead of through 2 and 4. The seeds of a pass depend on its
    ``thin`` alone, never on the passes before it, so a fit reached this way is the one the doubling steps
    would have reached. A component failing on R-hat alone (ESS met) is sampled twice as long.
    """
    need = 2.0
    for f in failing:
        ess = min(float(f.ess_bulk), float(f.ess_tail))
        if ess > 0 and np.isfinite(ess):
            need = max(need, config.min_ess / ess)
    return 2 ** math.ceil(math.log2(need))


def next_thin(thin: int, factor: int, max_thin: int) -> int:
    """``thin`` times ``factor``, or the largest doubling of ``thin`` within ``max_thin`` when that is more
    (the caller has checked that ``2 * thin <= max_thin``)."""
    t = thin * 2
    while t * 2 <= min(thin * factor, max_thin):
        t *= 2
    return t


def _split(plan, comps, fits, failing, max_strata):
    """The first failing component that may still be split and shows separated modes: (its index, the new
    components), or None."""
    if max_strata <= 1:
        return None
    for i in failing:
        if sum(fits[j].family == fits[i].family for j in range(len(comps))) >= max_strata:
            continue
        new = plan.split(comps, i, fits[i])
        if new is not None:
            return i, list(new)
    return None


class PerFamily(SamplingPlan):
    """Every family sampled on its own, from its mode, after Laplace screening (module docstring); a family whose
    chains show separated modes is split into strata (:class:`~ibo_pymc.engine.strata.Stratum`, at most
    ``config.max_strata``), merged back into the family's conditional posterior by :meth:`merge`.

    Seeds: one ``SeedSequence`` of the model's entropy (:meth:`~.model.IBOModelBase.seed_entropy`) spawns a
    child per family (its Laplace draws and bridge sampling; its NUTS seed plus ``thin``) and one for the
    assembly (:meth:`assembly_seed`), so each family's draws depend on its own child only; a stratum's stream
    is a child of its family's keyed by the stratum's box (:meth:`_stratum_seed`, :meth:`.Stratum.key`), not by
    its place among the strata.
    """

    def __init__(self, model, config: EngineConfig, *, progress: bool = False):
        self.model, self.config, self.progress = model, config, progress
        self.families = tuple(model.families)
        self.seeds = np.random.SeedSequence(model.seed_entropy()).spawn(len(self.families) + 2)
        self.density = {f: model.density(f) for f in self.families}
        self.mode = {f: find_mode(self.density[f], model.priors(f)) for f in self.families}
        self.laplace = {f: laplace(self.density[f], self.mode[f]) for f in self.families}
        self._restricted = {}  # stratum key -> RestrictedDensity
        self._start = {}  # stratum key -> its chains' start on its own scale

    def assembly_seed(self):
        return self.seeds[-1]

    def components(self) -> list:
        return list(self.families)

    def _family(self, comp) -> str:
        return comp if isinstance(comp, str) else comp.family

    def _seed(self, comp) -> np.random.SeedSequence:
        fam = self.seeds[self.families.index(self._family(comp))]
        return fam if isinstance(comp, str) else self._stratum_seed(fam, 1, comp.key())

    @staticmethod
    def _stratum_seed(family_seed: np.random.SeedSequence, *key: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(family_seed.entropy, spawn_key=(*family_seed.spawn_key, *key))

    def _density(self, comp):
        return self.density[comp] if isinstance(comp, str) else self._restricted[comp.key()]

    def label(self, comp) -> str:
        return comp if isinstance(comp, str) else comp.label

    def log_share(self, comp) -> float:
        return 0.0 if isinstance(comp, str) else self._restricted[comp.key()].log_share

    def sample(self, comps, todo, thin):
        config = self.config
        best = max(v[0] for v in self.laplace.values())
        out = {}
        for k in todo:
            comp = comps[k]
            fam = self._family(comp)
            density = self._density(comp)
            names = tuple(density.names)
            lap = self.laplace[fam]
            # a family is screened only on a valid Laplace estimate (a failed one, -inf, is sampled)
            if isinstance(comp, str) and math.isfinite(lap[0]) and lap[0] < best - config.screen:
                X = np.random.default_rng(self._seed(comp)).multivariate_normal(
                    self.mode[fam], lap[1], size=(config.chains, config.draws)
                )
                out[k] = ComponentFit(fam, fam, fam, names, X, None, 0, "laplace", lap[0])
                continue
            start = self.mode[fam] if isinstance(comp, str) else self._start[comp.key()]
            seed = int(self._seed(comp).generate_state(1)[0]) + thin[k]
            X, stats = sample_family(density, start, config, seed, thin[k])
            r_hat, bulk, tail = diagnose(X, config.rhat_decimals)
            divergences = int(np.asarray(stats["diverging"]).sum()) if "diverging" in stats else 0
            out[k] = ComponentFit(
                comp,
                fam,
                self.label(comp),
                names,
                X,
                stats,
                thin[k],
                r_hat=r_hat,
                ess_bulk=bulk,
                ess_tail=tail,
                divergences=divergences,
                sampling_error=float(stats.attrs.get("sampling_error", math.nan)),
                log_share=self.log_share(comp),
            )
        return out

    def evidences(self, comps, fits, todo):
        for k in todo:
            f = fits[k]
            ev = bridge_from_draws(f.draws, self._density(comps[k]).value, np.random.default_rng(self._seed(comps[k])))
            f.log_evidence, f.rel_error = ev.log_evidence, ev.rel_error
            if self.progress:
                self.log(
                    f"  {f.label}: R-hat {f.r_hat:.3f}, ESS {min(f.ess_bulk, f.ess_tail):.0f}"
                    + (f", thinned {f.thin}x" if f.thin > 1 else "")
                )

    def split(self, comps, i, fit):
        """Split ``comps[i]`` where its draws, on the family's unconstrained scale, show separated modes
        (:func:`~ibo_pymc.engine.strata.split_point`); each stratum's chains start from the best of its side's
        draws, polished by L-BFGS on its own scale."""
        from ibo_pymc.engine.strata import RestrictedDensity, Stratum, renumber, split_point

        comp = comps[i]
        fam = self._family(comp)
        parent = Stratum(fam, ()) if isinstance(comp, str) else comp
        z = fit.draws if isinstance(comp, str) else self._restricted[comp.key()].to_base(fit.draws)
        z = z.reshape(-1, z.shape[-1])
        names = list(fit.names)
        at = split_point({n: z[:, j] for j, n in enumerate(names)}, {n: parent.interval(n) for n in names})
        if at is None:
            return None
        name, value = at
        new = renumber([*comps[:i], *parent.split(name, value), *comps[i + 1 :]])
        priors = self.model.priors(fam)
        for c in new:
            if isinstance(c, Stratum) and c.key() not in self._restricted:
                self._restricted[c.key()] = d = RestrictedDensity(self.density[fam], priors, c)
                lo, hi = c.interval(name)
                side = z[(z[:, names.index(name)] > lo) & (z[:, names.index(name)] < hi)]
                self._start[c.key()] = _best_start(d, d.from_base(side[:: max(1, len(side) // 200)]))
        return new

    def merge(self, comps, fits, probabilities):
        """The family-level fits: a family split into strata becomes one fit whose draws are its strata's (on
        the family's scale) in proportion to their probabilities within the family (``round(P x draws)`` per
        chain, evenly spaced within each stratum's chain, at random positions), whose evidence is the sum of
        theirs weighted by their prior shares, and whose convergence is the worst of the strata the loop
        required; the strata's fits are kept in ``strata``. (The random positions hide the strata runs'
        autocorrelation from anything that computes it from the merged draws; the family's ESS is the strata
        runs'.)"""
        from ibo_pymc.engine.mixing import largest_remainder, softmax
        from ibo_pymc.engine.results import sum_with_error

        out = []
        overall = dict(zip(map(id, fits), probabilities))
        for c, f in zip(comps, fits):  # the final numbering (a further split renumbers the earlier strata)
            f.component, f.label = c, self.label(c)
        for fam in self.families:
            mine = [(c, f) for c, f in zip(comps, fits) if self._family(c) == fam]
            if len(mine) == 1 and isinstance(mine[0][0], str):
                out.append(mine[0][1])
                continue
            log_w = np.array([f.log_evidence + f.log_share for _, f in mine])
            p = softmax(log_w)
            rng = np.random.default_rng(self._stratum_seed(self.seeds[self.families.index(fam)], 2, len(mine)))
            C, D, dim = mine[0][1].draws.shape
            counts = largest_remainder(p, D)
            X = np.empty((C, D, dim))
            for ch in range(C):
                parts = [
                    self._restricted[c.key()].to_base(f.draws[ch, np.floor(np.arange(n) * D / n).astype(int)])
                    for (c, f), n in zip(mine, counts)
                    if n > 0
                ]
                X[ch] = np.concatenate(parts)[rng.permutation(D)]
            total, err = sum_with_error(log_w, np.array([f.rel_error for _, f in mine]))
            # the family's convergence is that of the strata the loop required (probability >= relevance)
            required = [f for _, f in mine if overall[id(f)] >= self.config.relevance] or [f for _, f in mine]
            out.append(
                ComponentFit(
                    fam,
                    fam,
                    fam,
                    mine[0][1].names,
                    X,
                    None,
                    max(f.thin for _, f in mine),
                    log_evidence=total,
                    rel_error=err,
                    r_hat=max(f.r_hat for f in required),
                    ess_bulk=min(f.ess_bulk for f in required),
                    ess_tail=min(f.ess_tail for f in required),
                    divergences=sum(f.divergences for _, f in mine),
                    sampling_error=max(f.sampling_error for _, f in mine),
                    strata=[f for _, f in mine],
                )
            )
        return out


def _best_start(density, points: np.ndarray) -> np.ndarray:
    """The best of ``points`` under ``density``, polished by L-BFGS (kept as it is where that fails)."""
    from scipy import optimize

    with np.errstate(all="ignore"):
        values = density.value(points)
    values = np.where(np.isfinite(values), values, -np.inf)
    x0 = points[int(np.argmax(values))]
    try:
        r = optimize.minimize(_negative(density), x0, jac=True, method="L-BFGS-B")
    except (ArithmeticError, ValueError):
        return x0
    return r.x if np.isfinite(r.fun) and r.fun <= -values.max() else x0
