"""The family-by-family fit: screening, NUTS per family, thinning, bridge-sampled evidences.

Why family by family: the family-marginalised posterior of a subject is the
mixture ``sum_k P(k | y) p(params | y, k)`` of the families' conditional
posteriors, and sampling the mixture directly fails where families overlap
(the same curve under two families joins their modes by ridges that chains
cannot cross). Each conditional posterior is a small, unimodal-enough problem
that NUTS handles well; its normalising constant ``p(y | k)`` (bridge
sampling) gives ``P(k | y)``; the assembly (:mod:`.assembly`) draws the
marginal posterior from the pieces.

For each family (:func:`fit_families`):

1. the conditional posterior's mode (L-BFGS from the priors' centre and one
   scale either side; inside a box of +-10 scales where the unbounded search
   strays where the density is undefined) and its Laplace evidence;
2. screening: a family whose Laplace evidence is more than ``screen`` nats
   below the best family's is not sampled (posterior probability below
   ``exp(-screen)``); its draws come from the Laplace normal;
3. NUTS (nutpie or ``pm.sample``) started near the mode; R-hat and bulk and
   tail ESS of every parameter checked against the targets; a family that
   misses them is sampled again ``thin`` = 2, 4, ... times longer keeping
   every ``thin``-th draw, up to ``max_thin``;
4. the family's evidence by bridge sampling (:mod:`.bridge`).

Seeds: one ``SeedSequence`` of the task's entropy (:meth:`~.model.IBOModelBase.seed_entropy`) spawns a
child per family (its mode's jitter, Laplace draws and bridge sampling; its NUTS seed plus ``thin``) and one
for the assembly, so each family's draws depend on its own child only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ibo_pymc.engine.bridge import bridge_from_draws
from ibo_pymc.engine.config import EngineConfig
from ibo_pymc.engine.density import Density


@dataclass
class FamilyFit:
    """One family's conditional posterior: unconstrained draws (chain, draw, dim), the sampler's statistics
    (None when screened), the evidence, how it was obtained, and convergence."""

    family: str
    names: tuple
    draws: np.ndarray
    stats: object
    log_evidence: float
    rel_error: float
    method: str
    r_hat: float
    ess_bulk: float
    ess_tail: float
    divergences: int
    thin: int


def find_mode(density: Density, priors: dict) -> np.ndarray:
    """The density's mode on the unconstrained scale: L-BFGS from the priors' centre and one scale either
    side, the best of the three; within a box of +-10 scales where the unbounded search fails."""
    from scipy import optimize

    def neg(x):
        v, g = density.value_and_grad(x)
        return -v, -g

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
    import arviz as az

    r = max(float(az.rhat(draws[..., j])) for j in range(draws.shape[-1]))
    bulk = min(float(az.ess(draws[..., j], method="bulk")) for j in range(draws.shape[-1]))
    tail = min(float(az.ess(draws[..., j], method="tail")) for j in range(draws.shape[-1]))
    if rhat_decimals is not None:
        r, bulk, tail = (round(v, rhat_decimals) for v in (r, bulk, tail))
    return r, bulk, tail


def meets_targets(r_hat: float, ess_bulk: float, ess_tail: float, config: EngineConfig) -> bool:
    """Whether a family's draws meet the convergence targets of ``config``."""
    return r_hat <= config.target_rhat and min(ess_bulk, ess_tail) >= config.min_ess


def sample_family(density: Density, mode: np.ndarray, config: EngineConfig, seed: int, thin: int = 1):
    """NUTS draws (chain, draw, dim) of one family's conditional posterior on the unconstrained scale and the
    sampler's statistics; chains start at the mode plus N(0, 0.1^2) jitter. ``thin``: ``thin`` times the draws
    and tuning, every ``thin``-th draw kept."""
    draws, tune = config.draws * thin, config.tune * thin
    names = list(density.names)
    if config.sampler == "nutpie":
        import nutpie

        def initial_point(s):
            return mode + 0.1 * np.random.default_rng(s).standard_normal(len(mode))

        extra = {"low_rank_modified_mass_matrix": True} if config.mass_matrix == "low_rank" else {}
        tr = nutpie.sample(density.nutpie_model(initial_point), draws=draws, tune=tune, chains=config.chains,
                           cores=config.cores, seed=seed, progress_bar=False, target_accept=config.target_accept,
                           **extra)
        if thin > 1:
            tr = tr.isel(draw=slice(thin - 1, None, thin))
        X = np.stack([tr.posterior[n].values for n in names], axis=-1)
    else:
        import logging

        import pymc as pm

        from ibo_pymc.engine.samplers import pymc_log_level

        rng = np.random.default_rng(seed)
        init = [{"z": mode + 0.1 * rng.standard_normal(len(mode))} for _ in range(config.chains)]
        with pymc_log_level(logging.ERROR), density.pymc_model():
            tr = pm.sample(draws, tune=tune, chains=config.chains, cores=config.cores or 1, random_seed=seed,
                           initvals=init, progressbar=False, compute_convergence_checks=False,
                           target_accept=config.target_accept)
        if thin > 1:
            tr = tr.isel(draw=slice(thin - 1, None, thin))
        X = np.asarray(tr.posterior["z"].values, float)
    if X.shape[:2] != (config.chains, config.draws) or not np.isfinite(X).all():
        # on Ctrl-C the samplers stop and return what they have (nutpie pads with NaN): never keep that
        raise KeyboardInterrupt("sampling was interrupted")
    return X, tr.sample_stats


def fit_families(model, config: EngineConfig, *, progress: bool = False) -> list[FamilyFit]:
    """Every family's conditional posterior and evidence (module docstring); ``model`` is an
    :class:`~ibo_pymc.engine.model.IBOModelBase`. ``progress``: one line on stderr per family."""
    import sys

    families = tuple(model.families)
    seeds = fit_seeds(model)
    density = {f: model.density(f) for f in families}
    mode = {f: find_mode(density[f], model.priors(f)) for f in families}
    lap = {f: laplace(density[f], mode[f]) for f in families}
    best = max(v[0] for v in lap.values())
    out = []
    for k, fam in enumerate(families):
        rng = np.random.default_rng(seeds[k])
        names = tuple(density[fam].names)
        # a family is screened only on a valid Laplace estimate (a failed one, -inf, is sampled)
        if math.isfinite(lap[fam][0]) and lap[fam][0] < best - config.screen:
            X = rng.multivariate_normal(mode[fam], lap[fam][1], size=(config.chains, config.draws))
            out.append(FamilyFit(fam, names, X, None, lap[fam][0], math.nan, "laplace", math.nan, math.nan,
                                 math.nan, 0, 0))
            continue
        thin = 1
        while True:
            X, stats = sample_family(density[fam], mode[fam], config, int(seeds[k].generate_state(1)[0]) + thin, thin)
            r_hat, bulk, tail = diagnose(X, config.rhat_decimals)
            if meets_targets(r_hat, bulk, tail, config) or thin >= config.max_thin:
                break
            thin *= 2  # run longer, keep every thin-th draw
        ev = bridge_from_draws(X, density[fam].value, rng)
        if progress:
            print(f"  {fam}: R-hat {r_hat:.3f}, ESS {min(bulk, tail):.0f}" + (f", thinned {thin}x" if thin > 1 else ""),
                  file=sys.stderr, flush=True)
        divergences = int(np.asarray(stats["diverging"]).sum()) if "diverging" in stats else 0
        out.append(FamilyFit(fam, names, X, stats, ev.log_evidence, ev.rel_error, "bridge", r_hat, bulk, tail,
                             divergences, thin))
    return out


def fit_seeds(model) -> list:
    """The fit's seeds (module docstring): a child per family, an unused one, and the assembly's last."""
    return np.random.SeedSequence(model.seed_entropy()).spawn(len(tuple(model.families)) + 2)
