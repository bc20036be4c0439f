"""A hierarchical model over subjects: partial pooling of every parameter, a population family mix.

The model. Every subject n uses one acquisition family k_n ~ Categorical(pi),
pi ~ Dirichlet(1, ..., 1) (the population family mix). Its parameters, each on
the logit scale of its prior interval (``z = logit((theta - lo) / (hi - lo))``),
are drawn from the population:

    z_gamma, z_w, z_tau^-, z_tau^+  ~ Normal(mu_j, sigma_j)       (shared by all families)
    z_shape parameter of family k   ~ Normal(mu_k, sigma_k)       (per family)
    mu ~ Normal(0, 1.5),  sigma ~ Gamma(2, 2)  (mean 1; zero-avoiding, Chung et al. 2013)

and its moves theta2 follow the single-subject likelihood. The population
quantities come out with credible intervals: the family mix pi; each
parameter's population median ``lo + (hi - lo) sigmoid(mu)`` (the typical
person) and spread sigma.

How it is sampled (two stages; Lunn et al. 2013, Stat. Comput. 23:?; the
"recursive Bayes" of Hooten et al. 2021). A subject's posterior is
multimodal in the family and often within a family, which the single-subject
fit already handles (conditional NUTS fits per family or stratum, bridge-sampled
evidences). The subject level is therefore integrated out with those fits: under
the independent fit's uniform prior p0, a subject's marginal likelihood given the
population parameters phi is

    p(y_n | phi, pi) = sum_c pi_{k(c)} Z_c  E_{theta ~ p(. | y_n, c)}[ p(theta | phi) / p0(theta) ]

over the fit's components c (families or their strata; Z_c their evidences under
the whole prior), and the expectation is an average over the component's NUTS
draws. NUTS then samples only the population parameters (a dozen or so), with
the subjects' draws fixed: it converges in seconds to a minute. The subjects'
shrunken posteriors follow by importance resampling of their own draws at every
population draw (weights ``pi_k Z_c p(theta | phi) / p0(theta)``), and each
subject's importance weights are checked by the Pareto k of PSIS (Vehtari et
al. 2024): k above 0.7 means the population is much narrower than that
subject's posterior and the estimate of p(y_n | phi) is unreliable.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numba
import numpy as np
import pandas as pd
import pytensor.tensor as pt
import xarray as xr
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ibo_pymc.engine.samplers import pymc_log_level
from ibo_pymc.tasks.hotspot.forward.priors import PRIORS, log_density_unconstrained
from ibo_pymc.tasks.hotspot.forward.variants import get_variant
from ibo_pymc.tasks.hotspot.model.parameters import internal_name

#: prior of the population parameters (logit scale of each parameter's prior interval)
MU_SD = 1.5
SIGMA_SCALE = 1.0


@dataclass(frozen=True)
class SubjectDraws:
    """What the population level needs of one subject's independent fit: per component, its family, its log
    evidence under the whole prior, and thinned conditional draws on the logit scale of the whole prior."""

    subject: int
    model: str
    families: tuple[str, ...]
    component_family: np.ndarray  # (C,) index into families
    log_evidence: np.ndarray  # (C,)
    z: np.ndarray  # (C, S, P): columns param, gamma, w, taus
    columns: tuple[str, ...]
    fit: object = field(default=None, repr=False, compare=False)  # the IBOModel (for held-out scoring)


def subject_draws(fit, n_draws: int = 500, *, drop_below: float = 40.0) -> SubjectDraws:
    """The :class:`SubjectDraws` of a fitted :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`: ``n_draws`` conditional draws of
    each component (evenly thinned), components more than ``drop_below`` nats of evidence below the best left out."""
    from ibo_pymc.engine.results import component_table
    from ibo_pymc.tasks.hotspot.model.builder import components

    idata = fit.idata
    comps = components(idata)
    table = component_table(idata)
    cond = {n: np.asarray(idata.conditional_posterior[n].values, float) for n in idata.conditional_posterior.data_vars}
    fams = tuple(fit.sd.families)
    variant = get_variant(fit.config.model)
    cols = ("param", "gamma", "w", *(internal_name(t) for t in variant.taus))
    keep = table["log_evidence"].to_numpy() >= table["log_evidence"].max() - drop_below
    zs, fam_idx, logev = [], [], []
    for k, c in enumerate(comps):
        if not keep[k]:
            continue
        d = fit.parameters.draws(comps, cond, k)
        flat = {key: np.asarray(d[key]).reshape(-1) for key in cols}
        total = len(flat["gamma"])
        idx = np.linspace(0, total - 1, min(n_draws, total)).round().astype(int)
        # the logit over the whole prior interval (also for a stratum's draws), as the population sees them
        z = np.stack([c.prior(fit.parameters.model_name(key)).to_unconstrained(flat[key][idx], eps=1e-12) for key in cols],
                     axis=-1)
        zs.append(z)
        fam_idx.append(fams.index(c.family))
        logev.append(float(table["log_evidence"].iloc[k]))
    S = min(len(z) for z in zs)
    return SubjectDraws(int(fit.obs.subject), fit.config.model, fams, np.array(fam_idx), np.array(logev),
                        np.stack([z[:S] for z in zs]), cols, fit)


def _stack(subjects: list[SubjectDraws]):
    """Pad the subjects' components to one array: z (N, C, S, P), family index (N, C), log evidence (N, C; -inf pads)."""
    N, C = len(subjects), max(len(s.log_evidence) for s in subjects)
    S, P = min(s.z.shape[1] for s in subjects), subjects[0].z.shape[2]
    z = np.zeros((N, C, S, P))
    fam = np.zeros((N, C), dtype=int)
    logev = np.full((N, C), -np.inf)
    for n, s in enumerate(subjects):
        c = len(s.log_evidence)
        z[n, :c] = s.z if s.z.shape[1] == S else _thin(s.z, S)
        fam[n, :c] = s.component_family
        logev[n, :c] = s.log_evidence
    return z, fam, logev


def _log_logistic(z: np.ndarray) -> np.ndarray:
    """log density of the logistic distribution (the uniform prior seen on the logit scale), summed over the
    parameters: a constant of the population model, computed once."""
    return log_density_unconstrained(z).sum(axis=-1)


def _log_ratio(z, base, mu, sigma, xp):
    """log of p(z | population) / p0(z), summed over the parameters: Normal(mu, sigma) over the logistic density
    ``base`` (:func:`_log_logistic`). ``xp`` is numpy or pytensor.tensor."""
    norm = -0.5 * ((z - mu) / sigma) ** 2 - xp.log(sigma)
    return norm.sum(axis=-1) - 0.5 * z.shape[-1] * np.log(2 * np.pi) - base


@numba.njit(cache=True)  # serial: PyMC's chain processes fork, which an OpenMP thread pool does not survive
def _population_kernel(z, base, a, mu, sd):
    """Value and gradient of ``sum_n logsumexp_c [a_nc + logsumexp_s lr_ncs - log S]``, lr as :func:`_log_ratio`.

    z (N, C, S, P), base (N, C, S), a (N, C; -inf for padding), mu and sd (N, C, P). Returns the value and the
    gradients with respect to a, mu and sd.
    """
    N, C, S, P = z.shape
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    g_a = np.zeros((N, C))
    g_mu = np.zeros((N, C, P))
    g_sd = np.zeros((N, C, P))
    values = np.zeros(N)
    for n in range(N):
        term = np.full(C, -np.inf)
        r1 = np.zeros((C, P))  # sum_s r_s (z - mu) / sd^2
        r2 = np.zeros((C, P))  # sum_s r_s ((z - mu)^2 / sd^3 - 1 / sd)
        lr = np.empty(S)
        for c in range(C):
            if a[n, c] == -np.inf:
                continue
            const = 0.0
            for p in range(P):
                const -= math.log(sd[n, c, p]) + half_log_2pi
            top = -np.inf
            for s in range(S):
                acc = const - base[n, c, s]
                for p in range(P):
                    d = (z[n, c, s, p] - mu[n, c, p]) / sd[n, c, p]
                    acc -= 0.5 * d * d
                lr[s] = acc
                if acc > top:
                    top = acc
            tot = 0.0
            for s in range(S):
                lr[s] = math.exp(lr[s] - top)
                tot += lr[s]
            term[c] = a[n, c] + top + math.log(tot) - math.log(S)
            for s in range(S):
                r = lr[s] / tot
                for p in range(P):
                    d = (z[n, c, s, p] - mu[n, c, p]) / sd[n, c, p]
                    r1[c, p] += r * d / sd[n, c, p]
                    r2[c, p] += r * (d * d - 1.0) / sd[n, c, p]
        top = -np.inf
        for c in range(C):
            if term[c] > top:
                top = term[c]
        tot = 0.0
        for c in range(C):
            if term[c] > -np.inf:
                tot += math.exp(term[c] - top)
        values[n] = top + math.log(tot)
        for c in range(C):
            if term[c] == -np.inf:
                continue
            wgt = math.exp(term[c] - top) / tot
            g_a[n, c] = wgt
            for p in range(P):
                g_mu[n, c, p] = wgt * r1[c, p]
                g_sd[n, c, p] = wgt * r2[c, p]
    return values.sum(), g_a, g_mu, g_sd


class PopulationLogLik(Op):
    """The subjects' summed log marginal likelihood given the population (module docstring), with its analytic
    gradient, as one Op over the per-component inputs ``a`` (N, C), ``mu`` and ``sd`` (N, C, P); ``z`` and ``base``
    are the subjects' draws and their logistic log density (constants)."""

    __props__ = ()

    def make_node(self, z, base, a, mu, sd):
        ins = [pt.as_tensor_variable(v, dtype="float64") for v in (z, base, a, mu, sd)]
        return Apply(self, ins, [pt.dscalar(), pt.dmatrix(), pt.dtensor3(), pt.dtensor3()])

    def perform(self, node, inputs, outputs):
        for out, v in zip(outputs, _population_kernel(*inputs)):
            out[0] = np.asarray(v, dtype="float64")

    def grad(self, inputs, output_grads):
        g = output_grads[0]
        _, g_a, g_mu, g_sd = self(*inputs)
        return [grad_not_implemented(self, j, inputs[j], "the subjects' draws are data") for j in range(2)] + [
            g * g_a, g * g_mu, g * g_sd]


population_loglik = PopulationLogLik()


def build_population_model(subjects: list[SubjectDraws]):
    """The PyMC model of the population parameters with the subjects integrated out (module docstring)."""
    import pymc as pm

    fams = subjects[0].families
    cols = subjects[0].columns
    shared = [c for c in cols if c != "param"]
    z, fam, logev = _stack(subjects)
    N, C, S, P = z.shape
    coords = {"subject": [s.subject for s in subjects], "family": list(fams), "parameter": shared}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, MU_SD, dims="parameter")
        sigma = pm.Gamma("sigma", alpha=2.0, beta=2.0 / SIGMA_SCALE, dims="parameter")
        mu_shape = pm.Normal("mu_shape", 0.0, MU_SD, dims="family")
        sigma_shape = pm.Gamma("sigma_shape", alpha=2.0, beta=2.0 / SIGMA_SCALE, dims="family")
        pi = pm.Dirichlet("family_frequency", np.ones(len(fams)), dims="family")
        mu_full = pt.concatenate([mu_shape[fam][..., None], pt.broadcast_to(mu, (N, C, P - 1))], axis=-1)  # (N, C, P)
        sd_full = pt.concatenate([sigma_shape[fam][..., None], pt.broadcast_to(sigma, (N, C, P - 1))], axis=-1)
        a = pt.as_tensor(logev) + pt.log(pi)[fam]
        pm.Potential("subjects", population_loglik(z, _log_logistic(z), a, mu_full, sd_full)[0])
    return model


@dataclass
class HierarchicalFit:
    """The posterior of the hierarchical model: population draws, subjects' shrunken draws, diagnostics."""

    idata: object
    subjects: list = field(repr=False)

    def population(self, prob: float = 0.95) -> pd.DataFrame:
        """The population quantities: family mix, each parameter's population median (on its own scale) and
        spread (sigma, logit scale), the families' shape parameters: mean, sd, equal-tailed ``prob`` interval,
        R-hat and ESS."""
        import arviz as az

        names = ["family_frequency", "median", "sigma", "median_shape", "sigma_shape"]
        post = self.idata.posterior[names]
        q = [(1 - prob) / 2, (1 + prob) / 2]
        rows = []
        for name in names:
            da = post[name]
            other = [d for d in da.dims if d not in ("chain", "draw")]
            for label in da[other[0]].values:
                x = da.sel({other[0]: label})
                rows.append({"quantity": name, "label": str(label), "mean": float(x.mean()), "sd": float(x.std()),
                             "lower": float(x.quantile(q[0])), "upper": float(x.quantile(q[1])),
                             "r_hat": float(az.rhat(x.values)), "ess_bulk": float(az.ess(x.values)),
                             "ess_tail": float(az.ess(x.values, method="tail"))})
        return pd.DataFrame(rows)

    def convergence(self) -> dict:
        """Worst R-hat, smallest bulk and tail ESS over the sampled population parameters, and divergences."""
        import arviz as az

        names = ["mu", "sigma", "mu_shape", "sigma_shape", "family_frequency"]
        s = az.summary(self.idata, var_names=names, kind="diagnostics", round_to="none")
        return {"r_hat": float(s["r_hat"].max()), "ess_bulk": float(s["ess_bulk"].min()), "ess_tail": float(s["ess_tail"].min()),
                "divergences": int(self.idata.sample_stats["diverging"].sum())}

    def subject_idata(self, subject: int):
        """One subject's shrunken posterior in the layout of a single-subject fit's ``posterior`` group (each
        family's shape parameter variable holds the subject's draws of its own family's), so that the
        single-subject tools (e.g. :func:`ibo_pymc.tasks.hotspot.compare.heldout_lppd`) read it."""
        import arviz as az

        from ibo_pymc.tasks.hotspot.forward.acquisition import get_family

        sub = self.idata["subject_posterior"].sel(subject=subject)
        s0 = self.subjects[0]
        ds = {n: sub[n] for n in sub.data_vars if n not in ("shape_parameter", "family_prob")}
        for f in s0.families:
            ds[get_family(f).var_name] = sub["shape_parameter"]
        post = xr.Dataset(ds).drop_vars("subject", errors="ignore")
        post.attrs.update({"model": s0.model, "subject": int(subject)})
        return az.InferenceData(posterior=post)

    def shrinkage(self) -> pd.DataFrame:
        """Per subject and parameter: posterior mean under the independent fit and under the hierarchical model."""
        sub = self.idata["subject_posterior"]
        rows = []
        for s in self.subjects:
            indep = s.fit.idata.posterior
            for name in [c for c in s.columns if c != "param"]:
                model_name = _model_names(s)[s.columns.index(name)]
                rows.append({"subject": s.subject, "parameter": model_name,
                             "independent": float(indep[model_name].mean()),
                             "hierarchical": float(sub[model_name].sel(subject=s.subject).mean())})
        return pd.DataFrame(rows)


def fit_hierarchical(fits, *, draws: int = 1000, tune: int = 1000, chains: int = 4, seed: int = 0, n_draws: int = 500,
                     target_accept: float = 0.95, progress: bool = False, cores: int | None = None) -> HierarchicalFit:
    """Sample the hierarchical model from the subjects' independent fits (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`,
    all of one model) and assemble its InferenceData (groups ``posterior``: population quantities;
    ``subject_posterior``: shrunken subject parameters and families; ``subject_diagnostics``: Pareto k of each
    subject's importance weights; ``sample_stats``)."""
    fits = list(fits)
    models = {f.config.model for f in fits}
    if len(models) != 1:
        raise ValueError(f"the fits must all be of one model, got {sorted(models)}")
    return fit_population([subject_draws(f, n_draws) for f in fits], draws=draws, tune=tune, chains=chains, seed=seed,
                          target_accept=target_accept, progress=progress, cores=cores)


def _thin(z: np.ndarray, S: int) -> np.ndarray:
    idx = np.linspace(0, z.shape[1] - 1, S).round().astype(int)
    return z[:, idx]


def fit_population(subjects: list[SubjectDraws], *, draws: int = 1000, tune: int = 1000, chains: int = 4, seed: int = 0,
                   target_accept: float = 0.95, progress: bool = False, cores: int | None = None) -> HierarchicalFit:
    """The population stage of :func:`fit_hierarchical` on the subjects' :class:`SubjectDraws` (all of one model and
    one set of families; each is thinned evenly to the smallest number of draws, the same in both stages)."""
    import dataclasses
    import logging

    import pymc as pm

    first = subjects[0]
    for s in subjects:
        if (s.model, s.families, s.columns) != (first.model, first.families, first.columns):
            raise ValueError(f"subject {s.subject}: fitted as {s.model} with families {s.families}; subject "
                             f"{first.subject} as {first.model} with {first.families}: a hierarchical model needs one")
    S = min(s.z.shape[1] for s in subjects)
    subjects = [s if s.z.shape[1] == S else dataclasses.replace(s, z=_thin(s.z, S)) for s in subjects]
    ss = np.random.SeedSequence(seed)
    s_nuts, s_resample = ss.spawn(2)
    model = build_population_model(subjects)
    # "Initializing NUTS ...", "Sampling 4 chains ..." only with the progress bar
    with pymc_log_level(None if progress else logging.WARNING), model:
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores or min(chains, os.cpu_count() or 1),
                          random_seed=int(s_nuts.generate_state(1)[0]), target_accept=target_accept,
                          progressbar=progress, compute_convergence_checks=False)
    _add_natural_scale(idata, subjects)
    idata.add_groups(_subject_posterior(idata, subjects, np.random.default_rng(s_resample)))
    return HierarchicalFit(idata, subjects)


def _add_natural_scale(idata, subjects) -> None:
    """Population medians on each parameter's own scale: ``lo + (hi - lo) sigmoid(mu)``."""
    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family

    post = idata.posterior
    s0 = subjects[0]
    names = [n for c, n in zip(s0.columns, _model_names(s0)) if c != "param"]
    lo = np.array([PRIORS[n].bounds[0] for n in names])
    hi = np.array([PRIORS[n].bounds[1] for n in names])
    sig = 1 / (1 + np.exp(-post["mu"]))
    post["median"] = (xr.DataArray(lo, dims="parameter") + xr.DataArray(hi - lo, dims="parameter") * sig).transpose("chain", "draw", "parameter")
    flo = np.array([get_family(f).prior.bounds[0] for f in s0.families])
    fhi = np.array([get_family(f).prior.bounds[1] for f in s0.families])
    post["median_shape"] = (xr.DataArray(flo, dims="family") + xr.DataArray(fhi - flo, dims="family")
                            / (1 + np.exp(-post["mu_shape"]))).transpose("chain", "draw", "family")
    post["median"].attrs["note"] = "population median of each parameter on its own scale"


def _model_names(s: SubjectDraws) -> list[str]:
    from ibo_pymc.tasks.hotspot.model.parameters import ComponentParameters

    p = ComponentParameters(get_variant(s.model))
    return [p.model_name(c) for c in s.columns]


def _subject_posterior(idata, subjects, rng, *, chunk: int = 250, k_draws: int = 100):
    """Importance resampling of every subject's draws at every population draw (module docstring).

    Works through the population draws in chunks of ``chunk`` (memory). The Pareto k of a subject is PSIS's
    shape estimate of its importance weights at ``k_draws`` population draws spread over the posterior: the
    median (``pareto_k``) and the largest (``pareto_k_max``).
    """
    import arviz as az
    from scipy.special import logsumexp, softmax

    post = idata.posterior
    Cn, Dn = post.sizes["chain"], post.sizes["draw"]
    T = Cn * Dn
    mu = post["mu"].values.reshape(T, -1)
    sigma = post["sigma"].values.reshape(T, -1)
    mu_k = post["mu_shape"].values.reshape(T, -1)
    sigma_k = post["sigma_shape"].values.reshape(T, -1)
    pi = post["family_frequency"].values.reshape(T, -1)
    s0 = subjects[0]
    names = _model_names(s0)
    out = {n: np.zeros((T, len(subjects))) for n in names if n != "param"}
    shape = np.zeros((T, len(subjects)))
    family = np.zeros((T, len(subjects)), dtype=np.int64)
    fam_prob = np.zeros((T, len(subjects), len(s0.families)))
    k_at = set(np.linspace(0, T - 1, min(k_draws, T)).round().astype(int).tolist())
    pareto = np.zeros((len(subjects), 2))
    for n, s in enumerate(subjects):
        C, S, P = s.z.shape
        base = _log_logistic(s.z)[None]
        ks = []
        for a in range(0, T, chunk):
            t = slice(a, min(a + chunk, T))
            m = np.concatenate([mu_k[t][:, s.component_family][..., None], np.broadcast_to(mu[t][:, None, :], (t.stop - a, C, P - 1))], -1)
            sd = np.concatenate([sigma_k[t][:, s.component_family][..., None], np.broadcast_to(sigma[t][:, None, :], (t.stop - a, C, P - 1))], -1)
            logw = _log_ratio(s.z[None], base, m[:, :, None, :], sd[:, :, None, :], np)  # (t, C, S)
            logw += s.log_evidence[None, :, None] + np.log(pi[t][:, s.component_family])[:, :, None]
            flat = logw.reshape(len(m), C * S)
            cum = np.cumsum(softmax(flat, axis=1), axis=1)
            u = rng.random(len(m)) * cum[:, -1]
            pick = np.minimum((cum < u[:, None]).sum(axis=1), C * S - 1)
            comp, draw = np.divmod(pick, S)
            theta = _from_logit(s, comp, draw)
            for j, name in enumerate(names):
                if name == "param":
                    shape[t, n] = theta[:, j]
                else:
                    out[name][t, n] = theta[:, j]
            family[t, n] = s.component_family[comp]
            per_comp = logsumexp(logw, axis=2)  # (t, C)
            total = logsumexp(per_comp, axis=1)
            for k in range(len(s0.families)):
                sel = s.component_family == k
                fam_prob[t, n, k] = np.exp(logsumexp(per_comp[:, sel], axis=1) - total) if sel.any() else 0.0
            for i in sorted(x - a for x in k_at if a <= x < t.stop):
                ks.append(float(az.psislw(flat[i] - flat[i].max())[1]))
        pareto[n] = np.median(ks), np.max(ks)
    coords = {"chain": np.arange(Cn), "draw": np.arange(Dn), "subject": [s.subject for s in subjects], "family": list(s0.families)}
    ds = {name: (("chain", "draw", "subject"), v.reshape(Cn, Dn, -1)) for name, v in out.items()}
    ds["shape_parameter"] = (("chain", "draw", "subject"), shape.reshape(Cn, Dn, -1))
    ds["family_draw"] = (("chain", "draw", "subject"), family.reshape(Cn, Dn, -1), {"labels": ",".join(s0.families)})
    ds["family_prob"] = (("chain", "draw", "subject", "family"), fam_prob.reshape(Cn, Dn, len(subjects), -1))
    sub = xr.Dataset(ds, coords=coords)
    diag = xr.Dataset({"pareto_k": ("subject", pareto[:, 0]), "pareto_k_max": ("subject", pareto[:, 1])},
                      coords={"subject": coords["subject"]})
    diag.attrs["note"] = ("PSIS Pareto k of each subject's importance weights at population draws spread over the posterior: "
                          "median and largest; above 0.7 the subject's reweighted posterior rests on few draws")
    return {"subject_posterior": sub, "subject_diagnostics": diag}


def _from_logit(s: SubjectDraws, comp, draw) -> np.ndarray:
    """The subject's draws (component, draw) back on the parameters' own scales: (T, P)."""
    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family

    z = s.z[comp, draw]  # (T, P)
    out = np.empty_like(z)
    family = s.component_family[comp]
    for j, (key, name) in enumerate(zip(s.columns, _model_names(s))):
        if key == "param":
            for k in np.unique(family):
                out[family == k, j] = get_family(s.families[k]).prior.from_unconstrained(z[family == k, j])
        else:
            out[:, j] = PRIORS[name].from_unconstrained(z[:, j])
    return out


class HierarchicalIBOModel:
    """The hierarchical model of several subjects, as :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel` is of one;
    ``IBOModel(observations, hierarchical=True)`` builds one.

    ``observations``: the subjects' :class:`~ibo_pymc.tasks.hotspot.data.rounds.SubjectObservations` (or a loaded data set:
    all its subjects); ``model`` and keyword settings (draws, seed, ...) configure the subjects' own fits as
    for ``IBOModel``; ``population_draws``, ``population_tune``, ``population_chains``, ``n_draws`` (draws of
    each component a subject contributes) and ``target_accept`` the population level. :meth:`fit` fits every
    subject alone in this process (``fitter(obs, config)``, given by ``IBOModel``), then samples the population
    (module docstring) and returns the InferenceData. For a cohort on a cluster, fit the subjects with
    :func:`~ibo_pymc.tasks.hotspot.model.fit_many.fit_cohort` and call :func:`fit_hierarchical` on the fits (what
    ``ibo-cohort hierarchical`` does).
    """

    def __init__(self, observations, model: str | None = "tau_pm", config=None, *, fitter=None, n_draws: int = 500,
                 population_draws: int = 1000, population_tune: int = 1000, population_chains: int = 4,
                 target_accept: float = 0.95, **kw):
        from ibo_pymc.tasks.hotspot.model.config import FitConfig

        if hasattr(observations, "subjects") and hasattr(observations, "observations"):
            observations = [observations.observations(s) for s in observations.subjects]
        self.observations = list(observations)
        if len(self.observations) < 2:
            raise ValueError("a hierarchical model needs at least two subjects")
        self.config = (config or FitConfig()).replace(model=model or (config.model if config else "tau_pm"), **kw)
        self.fitter = fitter
        self.settings = {"n_draws": n_draws, "draws": population_draws, "tune": population_tune,
                         "chains": population_chains, "target_accept": target_accept}
        self.fits: list = []
        self.result: HierarchicalFit | None = None

    def fit(self, progress: bool = False):
        if self.fitter is None:
            raise ValueError("no fitter: build the model as IBOModel(observations, hierarchical=True)")
        self.fits = [self.fitter(o, self.config) for o in self.observations]
        self.result = fit_hierarchical(self.fits, seed=self.config.seed, progress=progress, **self.settings)
        return self.result.idata

    @property
    def idata(self):
        return None if self.result is None else self.result.idata

    def population(self, prob: float = 0.95) -> pd.DataFrame:
        return self.result.population(prob)

    def shrinkage(self) -> pd.DataFrame:
        return self.result.shrinkage()


__all__ = ["HierarchicalFit", "HierarchicalIBOModel", "SubjectDraws", "build_population_model", "fit_hierarchical",
           "population_loglik", "subject_draws"]
