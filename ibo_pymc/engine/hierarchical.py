"""A hierarchical model over subjects: partial pooling of every parameter, a population family mix.

The model (any task: the parameters are a task's model's :meth:`~ibo_pymc.engine.model.IBOModelBase.priors`).
Every subject n uses one acquisition family k_n ~ Categorical(pi), pi ~ Dirichlet(1, ..., 1) (the population
family mix). Its parameters, each on its prior's unconstrained scale standardised by the prior's centre and
scale there (``z = (u - centre) / scale``; for a uniform prior on (lo, hi), ``u = logit((theta - lo) / (hi -
lo))``, centre 0 and scale 1; for a log-normal prior, ``u = log theta`` and the prior's mean and sd), are drawn
from the population:

    z_j of a parameter every family has        ~ Normal(mu_j, sigma_j)       (shared by all families)
    z of family k's own (shape) parameter      ~ Normal(mu_k, sigma_k)       (per family that has one)
    mu ~ Normal(0, 1.5),  sigma ~ Gamma(2, 2)  (mean 1; zero-avoiding, Chung et al. 2013)

and its observations follow the single-subject likelihood. The population quantities come out with credible
intervals: the family mix pi; each parameter's population median (``mu`` mapped back to the parameter's own
scale: the typical person) and spread sigma.

How it is sampled (two stages; Lunn et al. 2013, Stat. Comput. 23; the "recursive Bayes" of Hooten et al.
2021). A subject's posterior is multimodal in the family and often within a family, which the single-subject
fit already handles (conditional NUTS fits per family or stratum, bridge-sampled evidences). The subject level
is therefore integrated out with those fits: under the independent fit's prior p0, a subject's marginal
likelihood given the population parameters phi is

    p(y_n | phi, pi) = sum_c pi_{k(c)} Z_c  E_{theta ~ p(. | y_n, c)}[ p(theta | phi) / p0(theta) ]

over the fit's components c (families or their strata; Z_c their evidences under the whole prior), and the
expectation is an average over the component's NUTS draws. NUTS then samples only the population parameters
(a dozen or so), with the subjects' draws fixed: it converges in seconds to a minute. The subjects' shrunken
posteriors follow by importance resampling of their own draws at every population draw (weights
``pi_k Z_c p(theta | phi) / p0(theta)``), and each subject's importance weights are checked by the Pareto k of
PSIS (Vehtari et al. 2024): k above 0.7 means the population is much narrower than that subject's posterior
and the estimate of p(y_n | phi) is unreliable.

A task's model gives its subjects' draws through
:meth:`~ibo_pymc.engine.model.IBOModelBase.subject_draws`; ``SomeModel(observations, hierarchical=True)``
builds the :class:`HierarchicalModel` of several subjects.
"""

from __future__ import annotations

import itertools
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

from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.engine.convergence import diagnose_variable, worst
from ibo_pymc.engine.priors import UniformPrior
from ibo_pymc.engine.proposal import population_moments, proposal_subject_draws, shrunken_moments
from ibo_pymc.engine.samplers import pymc_log_level
from ibo_pymc.errors import InputError

#: prior of the population parameters (standardised unconstrained scale of each parameter's prior)
MU_SD = 1.5
SIGMA_SCALE = 1.0
#: the column of a component whose family has no shape parameter: z 0, population N(0, 1), contributing 0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class SubjectDraws:
    """What the population level needs of one subject's independent fit: per component, its family, its log
    evidence under the whole prior, and thinned conditional draws on the standardised unconstrained scale of
    the whole prior (module docstring).

    ``columns``: ``"param"`` (the family's own shape parameter; 0 for a family without one), then the
    parameters every family has. ``priors``: the shared parameters' priors (default: U(0, 1) each, whose
    unconstrained variable is logistic); ``shape_priors``: per family, ``(name, prior)`` of its shape parameter
    or None (default: ``("shape_FAMILY", U(0, 1))`` each).
    """

    subject: int
    model: str
    families: tuple[str, ...]
    component_family: np.ndarray  # (C,) index into families
    log_evidence: np.ndarray  # (C,)
    z: np.ndarray  # (C, S, P)
    columns: tuple[str, ...]
    fit: object = field(default=None, repr=False, compare=False)  # the task's model (for held-out scoring)
    priors: tuple = None
    shape_priors: tuple = None
    #: (C, S): the draws' log density as the population's likelihood divides by it, when they are not the
    #: first stage's (a refinement's proposal draws: log q - log-likelihood; :mod:`~ibo_pymc.engine.proposal`);
    #: None: the first stage's prior p0 (:meth:`log_base`)
    base: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: where the draws come from: "none" (the subject's own fit) or "proposal" (the refinement's)
    remedy: str = "none"

    def __post_init__(self):
        if self.priors is None:
            object.__setattr__(self, "priors", tuple(UniformPrior(0.0, 1.0) for _ in self.columns[1:]))
        if self.shape_priors is None:
            object.__setattr__(
                self, "shape_priors", tuple((f"shape_{f}", UniformPrior(0.0, 1.0)) for f in self.families)
            )

    @property
    def has_shape(self) -> np.ndarray:
        """Per family: whether it has a shape parameter."""
        return np.array([p is not None for p in self.shape_priors])

    def layout(self) -> tuple:
        """What must agree between the subjects of one hierarchical model."""
        return (
            self.model,
            self.families,
            self.columns,
            tuple(self.priors),
            tuple(None if p is None else p[0] for p in self.shape_priors),
        )

    def log_base(self, z: np.ndarray | None = None, family: np.ndarray | None = None) -> np.ndarray:
        """log p0 of draws on the standardised scale, summed over the columns: (..., C, S) for the subject's own
        draws (default; a refinement's draws: their own ``base``), or for draws ``z`` (..., P) of families
        ``family``."""
        if z is None and self.base is not None:
            return self.base
        if z is None:
            z, family = self.z, np.broadcast_to(self.component_family[:, None], self.z.shape[:2])
        shape = ([None if p is None else p[1] for p in self.shape_priors], family)
        cols = [_log_density(shape, z[..., 0])]
        cols += [_log_density(p, z[..., j + 1]) for j, p in enumerate(self.priors)]
        return np.stack(cols, axis=-1).sum(axis=-1)

    def free_columns(self, k: int) -> list[int]:
        """The columns family ``k`` samples: its shape parameter's (when it has one) and the shared ones."""
        return ([0] if self.shape_priors[k] is not None else []) + list(range(1, len(self.columns)))

    def loglik(self, k: int, z: np.ndarray) -> np.ndarray:
        """The subject's log-likelihood, summed over its observations, at draws ``z`` (M, P) of family ``k`` on
        the standardised scale: the task's :meth:`~ibo_pymc.engine.model.IBOModelBase.hierarchical_loglik` on
        the parameters' own scales (NaN, e.g. at a prior's edge, is -inf)."""
        theta = self.natural(z, np.full(len(z), k))
        params = {name: theta[:, j + 1] for j, name in enumerate(self.columns[1:])}
        if self.shape_priors[k] is not None:
            params[self.shape_priors[k][0]] = theta[:, 0]
        ll = np.asarray(self.fit.hierarchical_loglik(self.families[k], params), float).reshape(len(z))
        return np.where(np.isnan(ll), -np.inf, ll)

    def natural(self, z: np.ndarray, family: np.ndarray) -> np.ndarray:
        """Draws (T, P) on the standardised scale, of families ``family`` (T,), on the parameters' own scales
        (the shape column NaN for a family without one)."""
        out = np.empty_like(z)
        out[:, 0] = np.nan
        for k in np.unique(family):
            if self.shape_priors[k] is not None:
                out[family == k, 0] = _natural(self.shape_priors[k][1], z[family == k, 0])
        for j, p in enumerate(self.priors):
            out[:, j + 1] = _natural(p, z[:, j + 1])
        return out


def standardise(prior, u):
    """A prior's unconstrained draws ``u`` on the standardised scale of the population model."""
    return (u - prior.center) / prior.scale


def _natural(prior, z):
    return prior.from_unconstrained(prior.center + prior.scale * z)


def _log_density(prior, z):
    """log density of the standardised unconstrained variable: the prior's on the unconstrained scale times the
    scale; ``prior`` may be (priors per family, family index), with None: the padding column (standard normal)."""
    if isinstance(prior, tuple):
        priors, family = prior
        out = np.empty(np.shape(z))
        for k, p in enumerate(priors):
            sel = family == k
            if sel.any():
                out[sel] = (-0.5 * z[sel] ** 2 - _HALF_LOG_2PI) if p is None else _log_density(p, z[sel])
        return out
    return prior.log_density_unconstrained(prior.center + prior.scale * z) + math.log(prior.scale)


def default_subject_draws(model, n_draws: int = 500, *, drop_below: float = 40.0) -> SubjectDraws:
    """The :class:`SubjectDraws` of a fitted model of the fit schema (one component per family):
    ``n_draws`` conditional draws of each family (evenly thinned), families more than ``drop_below`` nats of
    evidence below the best left out."""
    from ibo_pymc.engine.results import component_table, conditional

    idata = model._need_fit()
    fams = tuple(model.families)
    shared = model._shared_parameters()
    shape_priors = []
    for f in fams:
        own = [n for n in model.priors(f) if n not in shared]
        if len(own) > 1:
            raise InputError(
                f"family {f} has {len(own)} parameters of its own ({', '.join(own)}); the hierarchical "
                "model takes at most one per family",
                field="families",
            )
        shape_priors.append((own[0], model.priors(f)[own[0]]) if own else None)
    priors = tuple(model.priors(fams[0])[n] for n in shared)
    table = component_table(idata)
    logev = table["log_evidence"].to_numpy()
    zs, fam_idx, keep_ev = [], [], []
    for k, f in enumerate(fams):
        if not logev[k] >= logev.max() - drop_below:
            continue
        cols = [conditional(idata, f, shape_priors[k][0]).values.reshape(-1) if shape_priors[k] else None]
        cols += [conditional(idata, f, n).values.reshape(-1) for n in shared]
        total = len(cols[1]) if shared else len(cols[0])
        idx = even_indices(total, n_draws)
        z = [
            np.zeros(len(idx))
            if cols[0] is None
            else standardise(shape_priors[k][1], shape_priors[k][1].to_unconstrained(cols[0][idx]))
        ]
        z += [standardise(p, p.to_unconstrained(c[idx])) for p, c in zip(priors, cols[1:])]
        zs.append(np.stack(z, axis=-1))
        fam_idx.append(k)
        keep_ev.append(float(logev[k]))
    S = min(len(z) for z in zs)
    return SubjectDraws(
        int(model.fit_attrs()["subject"]),
        _model_label(model),
        fams,
        np.array(fam_idx),
        np.array(keep_ev),
        np.stack([z[:S] for z in zs]),
        ("param", *shared),
        model,
        priors,
        tuple(shape_priors),
    )


def _model_label(model) -> str:
    """What was fitted, as far as the subjects of one hierarchical model must agree (the fit's attrs but the
    subject)."""
    attrs = {k: v for k, v in model.fit_attrs().items() if k != "subject"}
    return attrs.pop("model", "") + "".join(f", {k} {v}" for k, v in sorted(attrs.items()))


def _stack(subjects: list[SubjectDraws]):
    """Pad the subjects' components to one array: z (N, C, S, P), its log p0 (N, C, S; a refinement's draws their
    own ``base``), family index (N, C), log evidence (N, C; -inf pads) and each component's number of draws (N,
    C). The first stage's draws are thinned evenly to the fewest any first-stage subject has; a refinement's
    proposal draws are kept whole (more draws, where the weights need them)."""
    N, C = len(subjects), max(len(s.log_evidence) for s in subjects)
    first = [s.z.shape[1] for s in subjects if s.base is None]
    S_first = min(first) if first else 0
    sizes = [S_first if s.base is None else s.z.shape[1] for s in subjects]
    S, P = max(sizes), subjects[0].z.shape[2]
    z = np.zeros((N, C, S, P))
    base = np.zeros((N, C, S))
    fam = np.zeros((N, C), dtype=int)
    logev = np.full((N, C), -np.inf)
    counts = np.zeros((N, C), dtype=np.int64)
    for n, (s, m) in enumerate(zip(subjects, sizes)):
        c = len(s.log_evidence)
        if s.base is None:
            z[n, :c, :m] = s.z if s.z.shape[1] == m else _thin(s.z, m)
            base[n, :c, :m] = s.log_base(z[n, :c, :m], np.broadcast_to(s.component_family[:, None], (c, m)))
        else:
            z[n, :c, :m], base[n, :c, :m] = s.z, s.base
        fam[n, :c] = s.component_family
        logev[n, :c] = s.log_evidence
        counts[n, :c] = m
    return z, base, fam, logev, counts


def _log_ratio(z, base, mu, sigma, xp):
    """log of p(z | population) / p0(z), summed over the parameters: Normal(mu, sigma) over the prior's density
    ``base`` (:meth:`SubjectDraws.log_base`). ``xp`` is numpy or pytensor.tensor."""
    norm = -0.5 * ((z - mu) / sigma) ** 2 - xp.log(sigma)
    return norm.sum(axis=-1) - 0.5 * z.shape[-1] * np.log(2 * np.pi) - base


@numba.njit(cache=True)  # serial: PyMC's chain processes fork, which an OpenMP thread pool does not survive
def _population_kernel(z, base, a, mu, sd, counts):
    """Value and gradient of ``sum_n logsumexp_c [a_nc + logsumexp_s lr_ncs - log S_nc]``, lr as
    :func:`_log_ratio`, over the first ``S_nc = counts[n, c]`` draws of each component.

    z (N, C, S, P), base (N, C, S), a (N, C; -inf for padding), mu and sd (N, C, P), counts (N, C). Returns the
    value and the gradients with respect to a, mu and sd.
    """
    N, C, S, P = z.shape
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    g_a = np.zeros((N, C))
    g_mu = np.zeros((N, C, P))
    g_sd = np.zeros((N, C, P))
    total = 0.0
    lr = np.empty(S)
    dz = np.empty((S, P))  # (z - mu) / sd of each draw, computed once for the value and the gradient
    inv_sd = np.empty(P)
    m1 = np.empty(P)  # sum_s e_s d_s, e_s = exp(lr_s - max lr): the weights' first moment, unnormalised
    m2 = np.empty(P)  # sum_s e_s d_s^2
    term = np.empty(C)
    r1 = np.zeros((C, P))  # d term / d mu = E_r[d] / sd, r the normalised weights
    r2 = np.zeros((C, P))  # d term / d sd = (E_r[d^2] - 1) / sd
    for n in range(N):
        for c in range(C):
            term[c] = -np.inf
            if a[n, c] == -np.inf:
                continue
            const = 0.0
            for p in range(P):
                inv_sd[p] = 1.0 / sd[n, c, p]  # one division per component, not per draw
                const -= math.log(sd[n, c, p]) + half_log_2pi
                m1[p] = 0.0
                m2[p] = 0.0
            m = counts[n, c]
            top = -np.inf
            for s in range(m):
                acc = const - base[n, c, s]
                for p in range(P):
                    d = (z[n, c, s, p] - mu[n, c, p]) * inv_sd[p]
                    dz[s, p] = d
                    acc -= 0.5 * d * d
                lr[s] = acc
                if acc > top:
                    top = acc
            tot = 0.0
            for s in range(m):  # the weights and their moments in one pass
                e = math.exp(lr[s] - top)
                tot += e
                for p in range(P):
                    ed = e * dz[s, p]
                    m1[p] += ed
                    m2[p] += ed * dz[s, p]
            term[c] = a[n, c] + top + math.log(tot) - math.log(m)
            for p in range(P):
                r1[c, p] = m1[p] / tot * inv_sd[p]
                r2[c, p] = (m2[p] / tot - 1.0) * inv_sd[p]
        top = -np.inf
        for c in range(C):
            if term[c] > top:
                top = term[c]
        tot = 0.0
        for c in range(C):
            if term[c] > -np.inf:
                tot += math.exp(term[c] - top)
        total += top + math.log(tot)
        for c in range(C):
            if term[c] == -np.inf:
                continue
            wgt = math.exp(term[c] - top) / tot
            g_a[n, c] = wgt
            for p in range(P):
                g_mu[n, c, p] = wgt * r1[c, p]
                g_sd[n, c, p] = wgt * r2[c, p]
    return total, g_a, g_mu, g_sd


class PopulationLogLik(Op):
    """The subjects' summed log marginal likelihood given the population (module docstring), with its analytic
    gradient, as one Op over the per-component inputs ``a`` (N, C), ``mu`` and ``sd`` (N, C, P); ``z``, ``base`` and
    ``counts`` are the subjects' draws, their log density and each component's number of draws (constants)."""

    __props__ = ()

    def make_node(self, z, base, a, mu, sd, counts):
        ins = [pt.as_tensor_variable(v, dtype="float64") for v in (z, base, a, mu, sd)]
        ins.append(pt.as_tensor_variable(counts, dtype="int64"))
        return Apply(self, ins, [pt.dscalar(), pt.dmatrix(), pt.dtensor3(), pt.dtensor3()])

    def perform(self, node, inputs, outputs):
        for out, v in zip(outputs, _population_kernel(*inputs)):
            out[0] = np.asarray(v, dtype="float64")

    def grad(self, inputs, output_grads):
        g = output_grads[0]
        _, g_a, g_mu, g_sd = self(*inputs)
        data = "the subjects' draws are data"
        return (
            [grad_not_implemented(self, j, inputs[j], data) for j in range(2)]
            + [g * g_a, g * g_mu, g * g_sd]
            + [grad_not_implemented(self, 5, inputs[5], data)]
        )


population_loglik = PopulationLogLik()


def build_population_model(subjects: list[SubjectDraws]):
    """The PyMC model of the population parameters with the subjects integrated out (module docstring)."""
    import pymc as pm

    s0 = subjects[0]
    fams = s0.families
    shared = list(s0.columns[1:])
    has = s0.has_shape
    shaped = [f for f, h in zip(fams, has) if h]
    z, base, fam, logev, counts = _stack(subjects)
    N, C, S, P = z.shape
    coords = {
        "subject": [s.subject for s in subjects],
        "family": list(fams),
        "parameter": shared,
        "shape_family": shaped,
    }
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, MU_SD, dims="parameter")
        sigma = pm.Gamma("sigma", alpha=2.0, beta=2.0 / SIGMA_SCALE, dims="parameter")
        if shaped:  # (created in this order: the order seeds the chains' starting points)
            mu_shape = pm.Normal("mu_shape", 0.0, MU_SD, dims="shape_family")
            sigma_shape = pm.Gamma("sigma_shape", alpha=2.0, beta=2.0 / SIGMA_SCALE, dims="shape_family")
        pi = pm.Dirichlet("family_frequency", np.ones(len(fams)), dims="family")
        if has.all():
            mu_first, sd_first = mu_shape[fam], sigma_shape[fam]
        elif shaped:  # a family without a shape parameter: its column is 0 under N(0, 1), contributing nothing
            index = np.array([shaped.index(f) if h else 0 for f, h in zip(fams, has)])[fam]
            mu_first = pt.where(has[fam], mu_shape[index], 0.0)
            sd_first = pt.where(has[fam], sigma_shape[index], 1.0)
        else:
            mu_first, sd_first = pt.zeros((N, C)), pt.ones((N, C))
        mu_full = pt.concatenate([mu_first[..., None], pt.broadcast_to(mu, (N, C, P - 1))], axis=-1)  # (N, C, P)
        sd_full = pt.concatenate([sd_first[..., None], pt.broadcast_to(sigma, (N, C, P - 1))], axis=-1)
        a = pt.as_tensor(logev) + pt.log(pi)[fam]
        pm.Potential("subjects", population_loglik(z, base, a, mu_full, sd_full, counts)[0])
    return model


@dataclass
class HierarchicalFit:
    """The posterior of the hierarchical model: population draws, subjects' shrunken draws, diagnostics."""

    idata: object
    subjects: list = field(repr=False)

    def population(self, prob: float = HDI_PROB) -> pd.DataFrame:
        """The population quantities: family mix, each parameter's population median (on its own scale) and
        spread (sigma, logit scale), the families' shape parameters: mean, sd, equal-tailed ``prob`` interval,
        R-hat and ESS."""
        names = [
            n
            for n in ("family_frequency", "median", "sigma", "median_shape", "sigma_shape")
            if n in self.idata.posterior
        ]
        post = self.idata.posterior[names]
        q = [(1 - prob) / 2, (1 + prob) / 2]
        rows = []
        for name in names:
            da = post[name]
            other = [d for d in da.dims if d not in ("chain", "draw")]
            for label in da[other[0]].values:
                x = da.sel({other[0]: label})
                r_hat, bulk, tail = diagnose_variable(x)
                rows.append(
                    {
                        "quantity": name,
                        "label": str(label),
                        "mean": float(x.mean()),
                        "sd": float(x.std()),
                        "lower": float(x.quantile(q[0])),
                        "upper": float(x.quantile(q[1])),
                        "r_hat": r_hat,
                        "ess_bulk": bulk,
                        "ess_tail": tail,
                    }
                )
        return pd.DataFrame(rows)

    def weights_summary(self) -> dict:
        """The subjects' importance weights in numbers (``subject_diagnostics``): the largest median and largest
        single Pareto k, after the refinement and of the first stage, how many subjects were refined and how many
        are still unreliable, and the number of population fits."""
        diag = self.idata["subject_diagnostics"]
        return {
            "max_pareto_k": float(diag["pareto_k"].max()),
            "max_pareto_k_max": float(diag["pareto_k_max"].max()),
            "refined": int((diag["remedy"] != "none").sum()),
            "unreliable": int((~diag["reliable"]).sum()),
            "population_fits": int(diag.attrs["population_fits"]),
            "max_pareto_k_first_stage": float(diag["pareto_k_first_stage"].max()),
            "max_pareto_k_max_first_stage": float(diag["pareto_k_max_first_stage"].max()),
        }

    def convergence(self) -> dict:
        """Worst R-hat, smallest bulk and tail ESS over the sampled population parameters, and divergences."""
        names = [n for n in ("mu", "sigma", "mu_shape", "sigma_shape", "family_frequency") if n in self.idata.posterior]
        return {
            **worst(self.idata.posterior, names),
            "divergences": int(self.idata.sample_stats["diverging"].sum()),
        }

    def subject_idata(self, subject: int):
        """One subject's shrunken posterior in the layout of a single-subject fit's ``posterior`` group (each
        family's shape parameter variable holds the subject's draws of its own family's), so that the
        single-subject tools (e.g. the hotspot task's held-out scoring) read it."""
        import arviz as az

        sub = self.idata["subject_posterior"].sel(subject=subject)
        s0 = self.subjects[0]
        ds = {n: sub[n] for n in sub.data_vars if n not in ("shape_parameter", "family_prob")}
        for p in s0.shape_priors:
            if p is not None:
                ds[p[0]] = sub["shape_parameter"]
        post = xr.Dataset(ds).drop_vars("subject", errors="ignore")
        post.attrs.update({"model": s0.model, "subject": int(subject)})
        return az.InferenceData(posterior=post)

    def shrinkage(self) -> pd.DataFrame:
        """Per subject and parameter: posterior mean under the independent fit and under the hierarchical model."""
        sub = self.idata["subject_posterior"]
        rows = []
        for s in self.subjects:
            indep = s.fit.idata.posterior
            for model_name in s.columns[1:]:
                rows.append(
                    {
                        "subject": s.subject,
                        "parameter": model_name,
                        "independent": float(indep[model_name].mean()),
                        "hierarchical": float(sub[model_name].sel(subject=s.subject).mean()),
                    }
                )
        return pd.DataFrame(rows)


def fit_hierarchical(
    fits,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    n_draws: int = 500,
    target_accept: float = 0.95,
    progress: bool = False,
    cores: int | None = None,
    log=None,
    **refinement,
) -> HierarchicalFit:
    """Sample the hierarchical model from the subjects' independent fits (models of a task, all of one model:
    :meth:`~ibo_pymc.engine.model.IBOModelBase.subject_draws`) and assemble its InferenceData (groups ``posterior``:
    population quantities;
    ``subject_posterior``: shrunken subject parameters and families; ``subject_diagnostics``: Pareto k of each
    subject's importance weights and its remedy; ``sample_stats``). ``refinement``: the settings of
    :func:`fit_population`'s refinement (``refine``, ``proposal_draws``, ``max_rounds``, ``k_median``,
    ``k_max``); ``log``: one line per population fit (:func:`fit_population`)."""
    subjects = [f.subject_draws(n_draws) for f in fits]
    models = {s.model for s in subjects}
    if len(models) != 1:
        raise InputError(f"the fits must all be of one model, got {', '.join(sorted(models))}", field="fits")
    return fit_population(
        subjects,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        target_accept=target_accept,
        progress=progress,
        cores=cores,
        log=log,
        **refinement,
    )


def even_indices(total: int, n: int) -> np.ndarray:
    """``min(n, total)`` indices spread evenly over ``0..total-1`` (how draws are thinned for the population)."""
    return np.linspace(0, total - 1, min(n, total)).round().astype(int)


def _thin(z: np.ndarray, S: int) -> np.ndarray:
    return z[:, even_indices(z.shape[1], S)]


def fit_population(
    subjects: list[SubjectDraws],
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    target_accept: float = 0.95,
    progress: bool = False,
    cores: int | None = None,
    log=None,
    refine: bool = True,
    proposal_draws: int = 2000,
    max_rounds: int = 3,
    k_median: float = 0.7,
    k_max: float = 1.0,
) -> HierarchicalFit:
    """The population stage of :func:`fit_hierarchical` on the subjects' :class:`SubjectDraws` (all of one model and
    one set of families; each is thinned evenly to the smallest number of draws, the same in both stages).

    The refinement (``refine``; :mod:`~ibo_pymc.engine.proposal`): a subject whose importance weights are
    unreliable -- the median Pareto k over population draws at or above ``k_median``, or the largest at or above
    ``k_max`` -- gets ``proposal_draws`` fresh draws per family from a proposal near the population just fitted,
    and the population is fitted again; a subject flagged again gets four times as many draws, from the newer
    population and a proposal adapted to the shrunken posterior its refined draws show. ``max_rounds`` is the
    most times one subject is refined: the fits go on while a flagged subject has a refinement left, so a
    subject first flagged by a late population fit is refined too (the last fit flags nobody who could still
    be helped); every fit refines at least one subject, so there are at most ``max_rounds`` x subjects + 1.
    A subject given as draws alone (no model with ``hierarchical_loglik``) keeps its draws.
    ``subject_diagnostics`` says per subject which draws its numbers rest on (``remedy``: none or proposal),
    how many, the Pareto k of the final and of the first-stage weights, and whether they pass (``reliable``).
    Seeded: the same seed gives the same draws, and a run in which no subject is flagged is the one without the
    refinement.

    ``log``: a function given one line after each population fit (how long it took, and whom it refines next);
    default, with ``progress``, standard error.
    """
    import dataclasses
    import sys
    import time

    if log is None and progress:
        log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731

    first = subjects[0]
    for s in subjects:
        if s.layout() != first.layout():
            raise InputError(
                f"subject {s.subject}: fitted as {s.model} with families {s.families}; subject "
                f"{first.subject} as {first.model} with {first.families}: a hierarchical model needs one",
                field="subjects",
            )
    ids = [s.subject for s in subjects]
    if len(set(ids)) < len(ids):
        raise InputError(
            f"subject {next(i for i in ids if ids.count(i) > 1)} appears twice; a hierarchical model "
            "needs one fit per subject",
            field="subjects",
        )
    for name, v, least in (("proposal_draws", proposal_draws, 1), ("max_rounds", max_rounds, 0)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < least:
            raise InputError(f"expected a whole number >= {least}, got {v!r}", field=name)
    S = min(s.z.shape[1] for s in subjects)
    subjects = [s if s.z.shape[1] == S else dataclasses.replace(s, z=_thin(s.z, S)) for s in subjects]
    ss = np.random.SeedSequence(seed)
    s_nuts, s_resample, s_proposal = ss.spawn(3)  # the first two as ever: a run with nothing flagged is unchanged
    proposal_key = int(s_proposal.generate_state(1)[0])
    current, refined, first_k = list(subjects), np.zeros(len(subjects), dtype=int), None
    for rnd in itertools.count():
        t0 = time.perf_counter()
        idata = _sample_population(current, draws, tune, chains, s_nuts, target_accept, progress, cores)
        groups, weights = _subject_posterior(idata, current, np.random.default_rng(s_resample))
        diag = groups["subject_diagnostics"]
        k = np.stack([diag["pareto_k"].values, diag["pareto_k_max"].values], axis=1)
        if first_k is None:
            first_k = k
        failing = [n for n in range(len(current)) if not (k[n, 0] < k_median and k[n, 1] < k_max)]
        # a subject given as draws alone (no model whose likelihood a proposal could weigh) keeps them
        flagged = [n for n in failing if hasattr(subjects[n].fit, "hierarchical_loglik")]
        # refined again only while it has a refinement left (max_rounds per subject)
        again = [n for n in flagged if refined[n] < max_rounds]
        last = not refine or not again
        if log:

            def who(ns):
                return f"subject{'s' if len(ns) > 1 else ''} {', '.join(str(current[n].subject) for n in ns)}"

            kept = [n for n in failing if n not in flagged]  # failing, but with no likelihood to refine by
            spent = [n for n in flagged if not refine or n not in again]  # refined max_rounds times, or not at all
            if not failing:
                news = "every subject's importance weights pass"
            elif again and not last:
                news = f"refining the draws of {who(again)} (Pareto k), fitting the population again"
            else:
                news = ""
            if spent:
                state = "importance weights still unreliable" if refine else "unreliable, not refined"
                news += ("; " if news else "") + f"{who(spent)}: {state}"
            if kept:
                news += ("; " if news else "") + f"{who(kept)}: unreliable, given as draws alone (no refinement)"
            log(f"population fit {rnd + 1}: {time.perf_counter() - t0:.0f} s; {news}")
        if last:
            break
        moments = population_moments(idata.posterior, subjects[0])
        for n in again:
            # a subject refined before: its proposal adapted to the shrunken posterior its refined draws show
            shrunk = shrunken_moments(current[n], weights[n]) if refined[n] else None
            refined[n] += 1
            rng = np.random.default_rng([proposal_key, int(subjects[n].subject), rnd])
            current[n] = proposal_subject_draws(
                subjects[n], moments, rng, proposal_draws * 4 ** (refined[n] - 1), shrunk=shrunk
            )
    diag["remedy"] = ("subject", np.array([s.remedy for s in current]))
    diag["draws"] = ("subject", np.array([s.z.shape[0] * s.z.shape[1] for s in current]))
    diag["refinements"] = ("subject", refined)
    diag["pareto_k_first_stage"] = ("subject", first_k[:, 0])
    diag["pareto_k_max_first_stage"] = ("subject", first_k[:, 1])
    diag["reliable"] = ("subject", (k[:, 0] < k_median) & (k[:, 1] < k_max))
    diag.attrs.update({"population_fits": rnd + 1, "k_median": k_median, "k_max": k_max})
    _add_natural_scale(idata, current)
    idata.add_groups(groups)
    return HierarchicalFit(idata, current)


def _sample_population(subjects, draws, tune, chains, seed_seq, target_accept, progress, cores):
    """One NUTS run of the population model over the subjects' draws (``pm.sample``, seeded by ``seed_seq``)."""
    import logging

    import pymc as pm

    model = build_population_model(subjects)
    # "Initializing NUTS ...", "Sampling 4 chains ..." only with the progress bar
    with pymc_log_level(None if progress else logging.WARNING), model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores or min(chains, os.cpu_count() or 1),
            random_seed=int(seed_seq.generate_state(1)[0]),
            target_accept=target_accept,
            progressbar=progress,
            compute_convergence_checks=False,
        )


def _add_natural_scale(idata, subjects) -> None:
    """Population medians on each parameter's own scale: ``mu`` mapped back through the prior's map (a monotone
    map keeps a median: for a uniform prior ``lo + (hi - lo) sigmoid(mu)``, for a log-normal one ``exp(mu)``
    on its standardised scale)."""
    post = idata.posterior
    s0 = subjects[0]

    def natural(priors, mu, dim):  # mu with dim last
        return mu.copy(data=np.stack([_natural(p, mu.isel({dim: j}).values) for j, p in enumerate(priors)], axis=-1))

    post["median"] = natural(s0.priors, post["mu"].transpose("chain", "draw", "parameter"), "parameter")
    post["median"].attrs["note"] = "population median of each parameter on its own scale"
    if "mu_shape" in post:
        shaped = [p[1] for p in s0.shape_priors if p is not None]
        post["median_shape"] = natural(
            shaped, post["mu_shape"].transpose("chain", "draw", "shape_family"), "shape_family"
        )


def _subject_posterior(idata, subjects, rng, *, chunk: int = 250, k_draws: int = 100):
    """Importance resampling of every subject's draws at every population draw (module docstring).

    Works through the population draws in chunks of ``chunk`` (memory). The Pareto k of a subject is PSIS's
    shape estimate of its importance weights at ``k_draws`` population draws spread over the posterior: the
    median (``pareto_k``) and the largest (``pareto_k_max``). Returns the groups ``subject_posterior`` and
    ``subject_diagnostics``, and each subject's draws' normalised weights averaged over the population draws
    (C, S): what an adapted refinement takes (:func:`~ibo_pymc.engine.proposal.shrunken_moments`).
    """
    import arviz as az
    from scipy.special import logsumexp, softmax

    post = idata.posterior
    Cn, Dn = post.sizes["chain"], post.sizes["draw"]
    T = Cn * Dn
    mu = post["mu"].values.reshape(T, -1)
    sigma = post["sigma"].values.reshape(T, -1)
    pi = post["family_frequency"].values.reshape(T, -1)
    s0 = subjects[0]
    has = s0.has_shape
    shaped = [f for f, h in zip(s0.families, has) if h]
    index = np.array([shaped.index(f) if h else 0 for f, h in zip(s0.families, has)])
    # per family: its shape parameter's population (N(0, 1) for a family without one: its column is 0)
    if "mu_shape" in post:
        mu_k = np.where(has, post["mu_shape"].values.reshape(T, -1)[:, index], 0.0)
        sigma_k = np.where(has, post["sigma_shape"].values.reshape(T, -1)[:, index], 1.0)
    else:
        mu_k, sigma_k = np.zeros((T, len(has))), np.ones((T, len(has)))
    out = {n: np.zeros((T, len(subjects))) for n in s0.columns[1:]}
    shape = np.zeros((T, len(subjects)))
    family = np.zeros((T, len(subjects)), dtype=np.int64)
    fam_prob = np.zeros((T, len(subjects), len(s0.families)))
    k_at = set(np.linspace(0, T - 1, min(k_draws, T)).round().astype(int).tolist())
    pareto = np.zeros((len(subjects), 2))
    weights = []
    for n, s in enumerate(subjects):
        C, S, P = s.z.shape
        base = s.log_base()[None]
        ks = []
        wsum = np.zeros(C * S)
        for a in range(0, T, chunk):
            t = slice(a, min(a + chunk, T))
            m = np.concatenate(
                [mu_k[t][:, s.component_family][..., None], np.broadcast_to(mu[t][:, None, :], (t.stop - a, C, P - 1))],
                -1,
            )
            sd = np.concatenate(
                [
                    sigma_k[t][:, s.component_family][..., None],
                    np.broadcast_to(sigma[t][:, None, :], (t.stop - a, C, P - 1)),
                ],
                -1,
            )
            logw = _log_ratio(s.z[None], base, m[:, :, None, :], sd[:, :, None, :], np)  # (t, C, S)
            logw += s.log_evidence[None, :, None] + np.log(pi[t][:, s.component_family])[:, :, None]
            flat = logw.reshape(len(m), C * S)
            sm = softmax(flat, axis=1)
            wsum += sm.sum(axis=0)
            cum = np.cumsum(sm, axis=1)
            u = rng.random(len(m)) * cum[:, -1]
            pick = np.minimum((cum < u[:, None]).sum(axis=1), C * S - 1)
            comp, draw = np.divmod(pick, S)
            theta = s.natural(s.z[comp, draw], s.component_family[comp])
            for j, name in enumerate(s.columns):
                if j == 0:
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
                # with weights this heavy-tailed, PSIS's Pareto fit overflows exp / expm1 at candidate shapes far
                # from the data; the infinities are the right limits (a zero profile weight, a smoothed weight
                # clipped to the largest), so the warning would say nothing about the result
                with np.errstate(over="ignore"):
                    ks.append(float(az.psislw(flat[i] - flat[i].max())[1]))
        pareto[n] = np.median(ks), np.max(ks)
        weights.append((wsum / T).reshape(C, S))
    coords = {
        "chain": np.arange(Cn),
        "draw": np.arange(Dn),
        "subject": [s.subject for s in subjects],
        "family": list(s0.families),
    }
    ds = {name: (("chain", "draw", "subject"), v.reshape(Cn, Dn, -1)) for name, v in out.items()}
    ds["shape_parameter"] = (("chain", "draw", "subject"), shape.reshape(Cn, Dn, -1))
    ds["family_draw"] = (("chain", "draw", "subject"), family.reshape(Cn, Dn, -1), {"labels": ",".join(s0.families)})
    ds["family_prob"] = (("chain", "draw", "subject", "family"), fam_prob.reshape(Cn, Dn, len(subjects), -1))
    sub = xr.Dataset(ds, coords=coords)
    diag = xr.Dataset(
        {"pareto_k": ("subject", pareto[:, 0]), "pareto_k_max": ("subject", pareto[:, 1])},
        coords={"subject": coords["subject"]},
    )
    diag.attrs["note"] = (
        "PSIS Pareto k of each subject's importance weights at population draws spread over the posterior: "
        "median and largest; above 0.7 the subject's reweighted posterior rests on few draws"
    )
    return {"subject_posterior": sub, "subject_diagnostics": diag}, weights


class HierarchicalModel:
    """The hierarchical model of several subjects, as a task's model is of one: ``SomeModel(observations,
    hierarchical=True)`` builds one (:class:`~ibo_pymc.engine.model.IBOModelBase`).

    ``observations``: the subjects' observations (or a data set with ``subjects`` and ``observations(s)``: all
    its subjects); the other arguments and keyword settings (draws, seed, ...) configure the subjects' own fits
    as for the single-subject model; ``population_draws``, ``population_tune``, ``population_chains``,
    ``n_draws`` (draws of each component a subject contributes) and ``target_accept`` the population level;
    ``refine`` whether subjects with unreliable importance weights are refined (:func:`fit_population`; off,
    a quick look that says which subjects' numbers are not to be trusted yet).
    :meth:`fit` fits every subject alone in this process, then samples the population (module docstring) and
    returns the InferenceData. For a cohort on a cluster, fit the subjects there (``ibo-cohort``) and call
    :func:`fit_hierarchical` on the fits (what ``ibo-cohort hierarchical`` does).
    """

    def __init__(
        self,
        model_class,
        observations,
        *args,
        n_draws: int = 500,
        population_draws: int = 1000,
        population_tune: int = 1000,
        population_chains: int = 4,
        target_accept: float = 0.95,
        refine: bool = True,
        **kw,
    ):
        if hasattr(observations, "subjects") and hasattr(observations, "observations"):
            observations = [observations.observations(s) for s in observations.subjects]
        self.observations = list(observations)
        if len(self.observations) < 2:
            raise InputError("a hierarchical model needs at least two subjects", field="observations")
        self.models = [model_class(o, *args, **kw) for o in self.observations]
        self.config = self.models[0].config
        self.settings = {
            "n_draws": n_draws,
            "draws": population_draws,
            "tune": population_tune,
            "chains": population_chains,
            "target_accept": target_accept,
            "refine": refine,
        }
        self.result: HierarchicalFit | None = None

    def fit(self, progress: bool = False):
        """Fit every subject, then the population; returns the InferenceData (``idata``)."""
        for m in self.models:
            m.fit(progress=False)
        self.result = fit_hierarchical(self.models, seed=self.config.seed, progress=progress, **self.settings)
        return self.result.idata

    @property
    def fits(self) -> list:
        return self.models

    @property
    def idata(self):
        return None if self.result is None else self.result.idata

    def population(self, prob: float = HDI_PROB) -> pd.DataFrame:
        return self._need_fit().population(prob)

    def shrinkage(self) -> pd.DataFrame:
        return self._need_fit().shrinkage()

    def _need_fit(self) -> HierarchicalFit:
        if self.result is None:
            raise RuntimeError("fit the hierarchical model first (HierarchicalModel.fit)")
        return self.result


__all__ = [
    "HierarchicalFit",
    "HierarchicalModel",
    "SubjectDraws",
    "build_population_model",
    "default_subject_draws",
    "fit_hierarchical",
    "fit_population",
    "population_loglik",
]
