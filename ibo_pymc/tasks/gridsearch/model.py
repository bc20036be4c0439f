"""Bayesian inverse BO for the grid task: the posterior of (theta, beta, tau) with the family marginalised.

The model of one participant in one context (``theta`` the surrogate's
parameter: the GP's length-scale lambda, or the mean tracker's error_variance)::

    family ~ Categorical(1/F, ..., 1/F)          over UCB, EI, PI, mean, variance
    log theta ~ Normal(m, s)   log beta ~ Normal(m, s) (UCB)   log tau ~ Normal(m, s)
    choice_t ~ softmax(q_family(mu_t, s_t; beta) / tau)      every choice of the round but the first

with the parameters shared by the families (as in the hotspot task), so the
family-marginalised posterior is the mixture ``sum_k P(k | y) p(params | y, k)``
of the families' conditional posteriors. The fit is done as for the hotspot
task (:mod:`ibo_pymc.tasks.hotspot.model.fit`): each family's conditional posterior is
sampled by NUTS (nutpie on a cached C callback of the density, or ``pm.sample``
on the PyMC model of :func:`build_model`), started at its mode; its evidence
``p(y | k)`` is bridge-sampled (:func:`ibo_pymc.engine.bridge.bridge_sampling`),
giving ``P(k | y)``; the marginal draws take each draw's family in proportion.

Screening: every family's mode and Laplace evidence are computed first (a few
milliseconds). A family whose Laplace evidence is more than ``screen`` (default
20) nats below the best family's has posterior probability below ~1e-8, far
under the ``relevance`` (0.001) at which its convergence would be required; it
is not sampled, its evidence is the Laplace estimate (``method`` = laplace in
``family_evidence``) and its conditional draws are drawn from the Laplace
normal on the log scale. ``screen=inf`` samples every family.

InferenceData groups: ``posterior`` (marginal draws: ``family_draw``, the index of the draw's family, and
``lambda`` / ``error_variance``, ``beta``, ``tau``; beta of a draw whose family has
none is a prior draw; and the conditional draws ``<param>_given_family`` with
dim ``family``), ``log_likelihood`` (``choices``: per round, at the marginal
draws, for PSIS-LOO by round), ``sample_stats``, ``family_evidence`` (log
evidence, its relative error, probability, worst R-hat and smallest bulk ESS
per family), ``observed_data`` (choices and rewards); attrs: the task, subject,
context, surrogate, configuration (JSON) and package version.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.engine.mixing import largest_remainder, softmax
from ibo_pymc.tasks.gridsearch import density
from ibo_pymc.tasks.gridsearch.choice import FAMILIES, HAS_BETA
from ibo_pymc.tasks.gridsearch.data import GridRounds
from ibo_pymc.tasks.gridsearch.likelihood import THETA_NAME

#: log-normal priors: parameter -> (mean, sd) of its logarithm
PRIORS = {
    "lambda": (0.0, 1.0),
    "error_variance": (1.0, 1.0),
    "beta": (-1.6, 1.5),
    "tau": (-3.0, 1.5),
}
FORMAT = 1


@dataclass(frozen=True)
class GridSearchConfig:
    """What is fitted and how: surrogate, families, priors; draws, tune, chains, seed, sampler; targets."""

    surrogate: str = "GP"
    families: tuple = tuple(FAMILIES)
    priors: dict = field(default_factory=lambda: dict(PRIORS))
    draws: int = 1000
    tune: int = 500
    chains: int = 4
    seed: int = 0
    sampler: str = "nutpie"
    cores: int = 2
    r_hat: float = 1.01
    ess: float = 400.0
    relevance: float = 0.001
    screen: float = 20.0
    target_accept: float = 0.9
    max_thin: int = 4

    def __post_init__(self):
        if self.surrogate not in THETA_NAME:
            raise ValueError(f"unknown surrogate {self.surrogate!r}; expected GP or BMT")
        bad = [f for f in self.families if f not in FAMILIES]
        if bad or not self.families or len(set(self.families)) != len(self.families):
            raise ValueError(f"families must be distinct names out of {', '.join(FAMILIES)}; got {self.families}")
        if self.sampler not in ("nutpie", "pymc"):
            raise ValueError(f"sampler must be nutpie or pymc, got {self.sampler!r}")

    def names(self, family: str) -> list[str]:
        """The free parameters of a family, in the density's order."""
        return [THETA_NAME[self.surrogate], *(["beta"] if family in HAS_BETA else []), "tau"]

    def prior_array(self, family: str) -> np.ndarray:
        return np.array([self.priors[n] for n in self.names(family)], float)

    def to_json(self) -> str:
        d = asdict(self)
        d["families"] = list(self.families)
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GridSearchConfig:
        d = json.loads(text)
        d["families"] = tuple(d["families"])
        d["priors"] = {k: tuple(v) for k, v in d["priors"].items()}
        return cls(**d)


def build_model(gr: GridRounds, family: str, config: GridSearchConfig | None = None):
    """The PyMC model of one family's conditional posterior (log-normal priors, the fused likelihood Op)."""
    import pymc as pm
    import pytensor.tensor as pt

    config = config or GridSearchConfig()
    names = config.names(family)
    coords = {"round": gr.rounds.tolist()}
    with pm.Model(coords=coords) as m:
        v = {n: pm.LogNormal(n, mu=config.priors[n][0], sigma=config.priors[n][1]) for n in names}
        op = density.GridLogLik(config.surrogate, family)
        ll, _ = op(pt.as_tensor(gr.choices), pt.as_tensor(gr.y), v[names[0]], v.get("beta", pt.as_tensor(0.0)), v["tau"])
        pm.Potential("choices", ll.sum())
    return m


def _mode(buf, n_dim, prior):
    """The conditional posterior's mode on the log scale (L-BFGS from the prior mean and a few other points)."""
    from scipy import optimize

    def neg(x):
        return tuple(-v for v in density.log_density_grad(buf, x))

    # a box of the priors' mean +- 10 sd, used when the unbounded search strays where the density is not
    # defined (e.g. tau = exp(-800) = 0, a division by zero); the unbounded search first, as fits were made
    box = list(zip(prior[:, 0] - 10 * prior[:, 1], prior[:, 0] + 10 * prior[:, 1]))
    best = None
    for shift in (0.0, -1.0, 1.0):
        x0 = prior[:, 0] + shift * prior[:, 1]
        try:
            r = optimize.minimize(neg, x0, jac=True, method="L-BFGS-B")
            if not np.isfinite(r.fun):
                raise FloatingPointError
        except (ZeroDivisionError, FloatingPointError):
            r = optimize.minimize(neg, x0, jac=True, method="L-BFGS-B", bounds=box)
        if best is None or r.fun < best.fun:
            best = r
    return best.x


def _laplace(buf, mode):
    """Laplace log-evidence at the mode and the covariance (finite differences of the analytic gradient)."""
    d = len(mode)
    H = np.empty((d, d))
    h = 1e-4
    for j in range(d):
        e = np.zeros(d)
        e[j] = h
        H[:, j] = -(density.log_density_grad(buf, mode + e)[1] - density.log_density_grad(buf, mode - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    sign, logdet = np.linalg.slogdet(H)
    lp = density.log_density_grad(buf, mode)[0]
    if sign <= 0:
        return -math.inf, np.eye(d)
    return lp + 0.5 * d * math.log(2 * math.pi) - 0.5 * logdet, np.linalg.inv(H)


def _sample_family(gr, family, config, seed, buf, mode, thin: int = 1):
    """Conditional NUTS draws (chain, draw, n_dim) on the log scale, and sample stats (``thin``: run
    ``thin`` times longer and keep every ``thin``-th draw)."""
    names = config.names(family)
    draws, tune = config.draws * thin, config.tune * thin
    if config.sampler == "nutpie":
        import nutpie

        def initial_point(s):
            return mode + 0.1 * np.random.default_rng(s).standard_normal(len(mode))

        cm = density.compile_nutpie(buf, names, initial_point)
        # a low-rank-modified (dense-ish) mass matrix: beta and tau trade off in the UCB family
        tr = nutpie.sample(cm, draws=draws, tune=tune, chains=config.chains, cores=config.cores, seed=seed,
                           progress_bar=False, low_rank_modified_mass_matrix=True, target_accept=config.target_accept)
        if draws > config.draws:  # keep every k-th draw: the same number of draws as the other families
            tr = tr.isel(draw=slice(draws // config.draws - 1, None, draws // config.draws))
        X = np.stack([tr.posterior[n].values for n in names], axis=-1)
        stats = tr.sample_stats
    else:
        import logging

        import pymc as pm

        from ibo_pymc.engine.samplers import pymc_log_level

        m = build_model(gr, family, config)
        rng = np.random.default_rng(seed)
        init = [{f"{n}_log__": mode[i] + 0.1 * rng.standard_normal() for i, n in enumerate(names)} for _ in range(config.chains)]
        with pymc_log_level(logging.ERROR), m:
            tr = pm.sample(draws, tune=tune, chains=config.chains, cores=config.cores, random_seed=seed,
                           initvals=init, progressbar=False, compute_convergence_checks=False,
                           target_accept=config.target_accept)
        if draws > config.draws:
            tr = tr.isel(draw=slice(draws // config.draws - 1, None, draws // config.draws))
        X = np.stack([np.log(tr.posterior[n].values) for n in names], axis=-1)
        stats = tr.sample_stats
    return X, stats


def _evidence(X, buf, rng):
    from ibo_pymc.engine.bridge import bridge_from_draws

    return bridge_from_draws(X, lambda Z: density.log_density(buf, Z), rng)


def fit(gr: GridRounds, config: GridSearchConfig | None = None):
    """Fit one participant in one context; returns the InferenceData (groups in the module docstring)."""
    import arviz as az

    from ibo_pymc import __version__

    config = config or GridSearchConfig()
    ss = np.random.SeedSequence([config.seed, int(gr.subject), 0 if gr.context == "spatial" else 1])
    seeds = ss.spawn(len(config.families) + 2)  # one per family, [-1] for the assembly ([-2] unused, kept: seeds)
    cond, stats, rows = {}, {}, []
    bufs, modes, laplace = {}, {}, {}
    for fam in config.families:
        prior = config.prior_array(fam)
        bufs[fam] = density.pack(gr.choices, gr.y, config.surrogate, fam, prior)
        modes[fam] = _mode(bufs[fam], len(prior), prior)
        laplace[fam] = _laplace(bufs[fam], modes[fam])
    best = max(v[0] for v in laplace.values())
    for k, fam in enumerate(config.families):
        names = config.names(fam)
        rng = np.random.default_rng(seeds[k])
        # a family is screened only on a valid Laplace estimate (a failed one, -inf, is sampled)
        if math.isfinite(laplace[fam][0]) and laplace[fam][0] < best - config.screen:
            X = rng.multivariate_normal(modes[fam], laplace[fam][1], size=(config.chains, config.draws))
            rows.append({"family": fam, "log_evidence": laplace[fam][0], "rel_error": np.nan, "method": "laplace",
                         "r_hat": np.nan, "ess_bulk": np.nan, "ess_tail": np.nan, "divergences": 0, "thin": 0})
            st = None
        else:
            thin = 1
            while True:
                X, st = _sample_family(gr, fam, config, int(seeds[k].generate_state(1)[0]) + thin, bufs[fam], modes[fam], thin)
                summ = az.summary(az.convert_to_dataset({n: X[..., i] for i, n in enumerate(names)}), kind="diagnostics")
                ok = summ["r_hat"].max() <= config.r_hat and min(summ["ess_bulk"].min(), summ["ess_tail"].min()) >= config.ess
                if ok or thin >= config.max_thin:
                    break
                thin *= 2  # run longer, keep every thin-th draw
            ev = _evidence(X, bufs[fam], rng)
            rows.append({"family": fam, "log_evidence": ev.log_evidence, "rel_error": ev.rel_error, "method": "bridge",
                         "r_hat": float(summ["r_hat"].max()), "ess_bulk": float(summ["ess_bulk"].min()),
                         "ess_tail": float(summ["ess_tail"].min()),
                         "divergences": int(np.asarray(st["diverging"]).sum()) if "diverging" in st else 0,
                         "thin": thin})
        cond[fam] = {n: np.exp(X[..., i]) for i, n in enumerate(names)}
        stats[fam] = st
    tab = pd.DataFrame(rows).set_index("family")
    # posterior family probabilities: evidences under the uniform prior over families
    tab["probability"] = softmax(tab["log_evidence"].to_numpy())
    return _assemble(gr, config, cond, stats, tab, np.random.default_rng(seeds[-1]), __version__)


def _assemble(gr, config, cond, stats, tab, rng, version):
    import arviz as az

    fams = list(config.families)
    theta_name = THETA_NAME[config.surrogate]
    C, D = next(iter(cond.values()))["tau"].shape
    counts = largest_remainder(tab["probability"].to_numpy(), D)
    fam_idx = np.stack([rng.permutation(np.repeat(np.arange(len(fams)), counts)) for _ in range(C)])
    beta_prior = np.exp(config.priors["beta"][0] + config.priors["beta"][1] * rng.standard_normal((C, D)))
    post = {"family_draw": fam_idx}
    for n in (theta_name, "beta", "tau"):
        if n == "beta" and not any(f in HAS_BETA for f in fams):
            continue
        per = [cond[f][n] if n in cond[f] else beta_prior for f in fams]
        post[n] = np.choose(fam_idx, per)
    for n in (theta_name, "tau"):
        post[f"{n}_given_family"] = np.stack([cond[f][n] for f in fams], axis=-1)
    if "UCB" in fams:
        post["beta_given_UCB"] = cond["UCB"]["beta"]
    # pointwise log-likelihood per round at the marginal draws
    ll = np.empty((C, D, gr.n_rounds))
    for k, f in enumerate(fams):
        sel = fam_idx == k
        if not sel.any():
            continue
        th = post[theta_name][sel]
        b = post["beta"][sel] if f in HAS_BETA else np.zeros(sel.sum())
        t = post["tau"][sel]
        ll[sel] = round_loglik_draws(gr, config.surrogate, f, th, b, t)
    coords = {"family": fams, "round": gr.rounds.tolist(), "trial": np.arange(1, gr.choices.shape[1] + 1).tolist()}
    dims = {f"{n}_given_family": ["family"] for n in (theta_name, "tau")} | {"choices": ["round"]}
    attrs = {"ibo_pymc_version": version, "format": FORMAT, "task": "gridsearch", "subject": int(gr.subject),
             "context": gr.context, "surrogate": config.surrogate, "config": config.to_json(),
             "family_probabilities": json.dumps(dict(zip(fams, tab["probability"].round(12).tolist())))}
    idata = az.from_dict(posterior=post, log_likelihood={"choices": ll}, coords=coords, dims=dims, attrs=attrs)
    sampled = [f for f in fams if stats[f] is not None]
    ss = xr.concat([_stats(stats[f]) for f in sampled], dim=pd.Index(sampled, name="sampled_family"))
    idata.add_groups(sample_stats=ss.assign_attrs(attrs))
    ev = xr.Dataset({c: ("family", tab[c].to_numpy()) for c in tab.columns}, coords={"family": fams}, attrs=attrs)
    idata.add_groups(family_evidence=ev)
    obs = xr.Dataset({"choice": (("round", "trial"), gr.choices), "reward": (("round", "trial"), gr.z)},
                     coords={"round": coords["round"], "trial": coords["trial"]}, attrs=attrs)
    idata.add_groups(observed_data=obs)
    for g in idata.groups():
        idata[g].attrs.update(attrs)
    return idata


def _stats(st) -> xr.Dataset:
    keep = [v for v in ("diverging", "step_size", "n_steps", "tree_depth", "lp", "energy") if v in st]
    ds = xr.Dataset({v: st[v] for v in keep})
    ds = ds.drop_vars([c for c in ds.coords if c not in ("chain", "draw")])
    return ds.assign_coords(draw=np.arange(ds.sizes["draw"]), chain=np.arange(ds.sizes["chain"]))


def round_loglik_draws(gr: GridRounds, surrogate: str, family: str, theta, beta, tau) -> np.ndarray:
    """Per-round log-likelihood (n, R) at n parameter draws (plain choice rule)."""
    return density.round_loglik_many(gr.choices, gr.y, surrogate, family, theta, beta, tau)


def family_probabilities(idata) -> pd.Series:
    ev = idata["family_evidence"]
    return pd.Series(ev["probability"].values, index=ev["family"].values, name="probability")


def convergence(idata, config: GridSearchConfig | None = None) -> pd.DataFrame:
    """Per family: R-hat, ESS, divergences, and whether it meets the targets (families below ``relevance`` exempt)."""
    config = config or GridSearchConfig.from_json(idata.attrs["config"] if "config" in idata.attrs else idata.posterior.attrs["config"])
    ev = idata["family_evidence"].to_dataframe()
    ev["required"] = ev["probability"] >= config.relevance
    ok = (ev["r_hat"] <= config.r_hat) & (ev["ess_bulk"] >= config.ess) & (ev["ess_tail"] >= config.ess)
    ev["converged"] = (~ev["required"]) | (ok & (ev["method"] == "bridge"))
    return ev


def summary(idata, hdi_prob: float = 0.9) -> pd.DataFrame:
    """Posterior mean, sd and HDI of the family-marginalised parameters (the surrogate's parameter and tau)
    and of beta given UCB (the only family with a beta)."""
    import arviz as az

    post = idata.posterior
    names = [n for n in ("lambda", "error_variance", "tau", "beta_given_UCB") if n in post]
    out = az.summary(idata, var_names=names, hdi_prob=hdi_prob, kind="stats")
    return out.rename(index={"beta_given_UCB": "beta | UCB"})


def fit_file_name(subject: int, context: str, surrogate: str = "GP") -> str:
    return f"gridsearch-{int(subject):03d}-{context}-{surrogate}.nc"


def save(idata, path) -> Path:
    """Write the fit to NetCDF atomically (config and version in the attrs of every group), as the hotspot
    task's fits are written (:func:`ibo_pymc.io.write_fit`)."""
    from ibo_pymc.io import write_fit

    return write_fit(idata, path)


def load(path):
    """A saved fit: ``(idata, config)``."""
    import arviz as az

    from ibo_pymc.errors import InputError

    try:
        idata = az.from_netcdf(str(path))
        attrs = idata.posterior.attrs
        if attrs.get("task") != "gridsearch":
            raise KeyError("task")
        return idata, GridSearchConfig.from_json(attrs["config"])
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"not a saved gridsearch fit ({type(exc).__name__}: {exc})", path=path) from None


def fit_and_save(gr: GridRounds, config: GridSearchConfig, path: str) -> dict:
    """One execution-layer task: fit, save, return the convergence row."""
    idata = fit(gr, config)
    save(idata, path)
    conv = convergence(idata, config)
    return {"subject": gr.subject, "context": gr.context, "path": str(path), **_headline(conv)}


def _headline(conv: pd.DataFrame) -> dict:
    req = conv[conv["required"]]
    return {"r_hat_max": float(req["r_hat"].max()), "ess_bulk_min": float(req["ess_bulk"].min()),
            "ess_tail_min": float(req["ess_tail"].min()), "divergences": int(conv["divergences"].sum()),
            "converged": bool(conv["converged"].all())}
