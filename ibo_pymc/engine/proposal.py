"""The hierarchical model's refinement: fresh draws, from a proposal near the population, for a subject whose
importance weights are unreliable.

Why a subject needs it. The population level (:mod:`~ibo_pymc.engine.hierarchical`) estimates a subject's
likelihood given the population parameters phi by reweighting the draws of its own fit, made under the
independent prior p0, by ``N(z | phi) / p0(z)``. On the standardised logit scale of a uniform prior, p0 is the
logistic density; a fitted population spread of about 3 (the thresholds of the hotspot task) is far wider in
its tails than the logistic, so the weights are heavy-tailed wherever the subject's posterior reaches towards a
prior edge, and PSIS's Pareto k says so (k >= 0.7: the estimate of p(y_n | phi) and the shrunken posterior rest
on a handful of draws). More draws of the same fit do not help: k is a property of the weights' tail, and the
draws needed grow like 10^(1 / (1 - k)).

The refinement (the two-stage method's own, Lunn et al. 2013, Stat. Comput. 23: a second stage of draws from a
proposal informed by the first population fit) replaces such a subject's draws by ``n`` independent draws per
family k it has, from a defensive mixture of multivariate t distributions (4 degrees of freedom) on the family's
free columns:

    q_k = 0.50 sum_c w_c t(m*_c, h^2 S*_c)       the subject's posterior shrunk towards the population
        + 0.25 sum_c w_c t(m_c,  h^2 S_c)        the subject's own posterior, widened
        + 0.25 t(E[mu], diag(1.2^2 (E[sigma^2] + Var[mu])))   the population's predictive (defensive)

over the fit's components c of family k (a family, or its strata) with their shares w_c of the family's
evidence, ``m_c`` and ``S_c`` the mean and covariance of their draws, ``h = 1.5``, and a Gaussian shrinkage:
the likelihood's precision ``L_c = S_c^-1 - diag(1 / Var_p0)`` (eigenvalues clipped at 0; Var_p0 = pi^2 / 3 for
the logistic, 1 for a log-normal prior's standardised normal), ``S*_c = (L_c + diag(1 / E[sigma^2]))^-1`` and
``m*_c = S*_c (S_c^-1 m_c + E[mu] / E[sigma^2])``, with the population's posterior moments from the fit before.

Each draw z then carries ``base = log q_k(z) - log L_k(z)`` (L_k the subject's likelihood, summed over its
observations, from the task's :meth:`~ibo_pymc.engine.model.IBOModelBase.hierarchical_loglik`) and its
family a log evidence of 0, so the population's kernel, unchanged, estimates ``E_q[L_k N / q_k] = integral of
L_k(z) N(z | phi) dz = p(y_n | phi, k)`` -- unbiased for any q fixed before the population is refitted -- and
the resampling weights are ``pi_k L_k N / q_k``. Those weights are bounded for every phi: L_k is, and
``N(z | phi) / q_k(z) <= N / (0.25 t)``, whose tails are a normal's over a t's. So every moment is finite and
the weights' true Pareto k is below 0; what PSIS estimates from ``n`` draws is checked again after the
population is refitted (:func:`~ibo_pymc.engine.hierarchical.fit_population`). A subject flagged again (the
Gaussian shrinkage can misplace a posterior pressed against a prior edge, where the logistic prior is far from
normal) gets an adapted proposal: the shrunk part is then centred on the moments of its shrunken posterior as
the refined draws' weights give them (:func:`shrunken_moments`), the adaptive importance sampling step.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from ibo_pymc.engine.priors import UniformPrior

#: degrees of freedom of the proposal's t components, the widening of the subject's components and of the
#: population's predictive, and the mixture's weights (shrunk, own, population)
DF = 4
WIDEN = 1.5
WIDEN_POPULATION = 1.2
MIXTURE = (0.5, 0.25, 0.25)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def base_variance(prior) -> float:
    """The variance of p0 on the population's standardised scale: the logistic's pi^2 / 3 for a uniform prior
    (the logit of U(lo, hi)), the standard normal's 1 for a log-normal one."""
    return math.pi**2 / 3 if isinstance(prior, UniformPrior) else 1.0


@dataclasses.dataclass(frozen=True)
class PopulationMoments:
    """The population's posterior moments per family on the standardised scale of every column (P,): E[mu],
    E[sigma^2] and Var[mu] (a family without a shape parameter: column 0 is unused)."""

    mean: np.ndarray  # (K, P)
    var: np.ndarray  # (K, P)
    var_mean: np.ndarray  # (K, P)


def population_moments(post, subject) -> PopulationMoments:
    """:class:`PopulationMoments` from a population fit's ``posterior`` (``mu``, ``sigma`` over the shared
    parameters; ``mu_shape``, ``sigma_shape`` over the families with a shape parameter) for the layout of
    ``subject`` (a :class:`~ibo_pymc.engine.hierarchical.SubjectDraws`)."""
    has = subject.has_shape
    K, P = len(has), len(subject.columns)
    mu = post["mu"].values.reshape(-1, P - 1)
    sigma = post["sigma"].values.reshape(-1, P - 1)
    mean, var, var_mean = np.zeros((K, P)), np.ones((K, P)), np.zeros((K, P))
    mean[:, 1:], var[:, 1:], var_mean[:, 1:] = mu.mean(0), (sigma**2).mean(0), mu.var(0)
    if has.any():
        ms = post["mu_shape"].values.reshape(-1, int(has.sum()))
        ss = post["sigma_shape"].values.reshape(-1, int(has.sum()))
        j = np.cumsum(has) - 1
        for k in np.flatnonzero(has):
            mean[k, 0], var[k, 0], var_mean[k, 0] = ms[:, j[k]].mean(), (ss[:, j[k]] ** 2).mean(), ms[:, j[k]].var()
    return PopulationMoments(mean, var, var_mean)


class TMixture:
    """A mixture of multivariate t distributions (``DF`` degrees of freedom): weights, locations and shape
    matrices; its log density and iid draws."""

    def __init__(self, weights, locs, shapes):
        w = np.asarray(weights, float)
        self.log_weights = np.log(w / w.sum())
        self.parts = [stats.multivariate_t(np.atleast_1d(m), np.atleast_2d(S), df=DF) for m, S in zip(locs, shapes)]
        self.dim = len(np.atleast_1d(locs[0]))

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float).reshape(-1, self.dim)
        parts = [lw + np.reshape(p.logpdf(x), len(x)) for lw, p in zip(self.log_weights, self.parts)]
        return logsumexp(np.stack(parts), axis=0)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        counts = rng.multinomial(n, np.exp(self.log_weights))
        out = [np.reshape(p.rvs(size=m, random_state=rng), (m, self.dim)) for p, m in zip(self.parts, counts) if m]
        x = np.concatenate(out)
        return x[rng.permutation(n)]


def _moments(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = z.mean(axis=0)
    S = np.atleast_2d(np.cov(z, rowvar=False)) + 1e-8 * np.eye(z.shape[1])
    return m, S


def _shrunk(m, S, v0, pop_mean, pop_var):
    """The Gaussian shrinkage of a posterior (m, S) found under a prior of variance ``v0`` (diagonal, mean 0)
    towards a population N(pop_mean, diag pop_var)."""
    P = np.linalg.inv(S)
    L = P - np.diag(1.0 / v0)
    vals, vecs = np.linalg.eigh(0.5 * (L + L.T))
    L = (vecs * np.clip(vals, 0.0, None)) @ vecs.T
    S_star = np.linalg.inv(L + np.diag(1.0 / pop_var))
    S_star = 0.5 * (S_star + S_star.T)
    return S_star @ (P @ m + pop_mean / pop_var), S_star


def family_proposal(subject, k: int, moments: PopulationMoments, shrunk=None) -> TMixture:
    """The proposal q_k (module docstring) of family ``k`` from the subject's first-stage draws of that family;
    ``shrunk``: the moments (mean, covariance on the family's free columns) of the subject's shrunken posterior
    where they are known (:func:`shrunken_moments`), in place of the Gaussian shrinkage of each component."""
    cols = subject.free_columns(k)
    comps = np.flatnonzero(subject.component_family == k)
    ev = subject.log_evidence[comps]
    w = np.exp(ev - ev.max())
    w /= w.sum()
    priors = [subject.shape_priors[k][1] if j == 0 else subject.priors[j - 1] for j in cols]
    v0 = np.array([base_variance(p) for p in priors])
    pop_mean, pop_var = moments.mean[k, cols], moments.var[k, cols]
    weights, locs, shapes = [], [], []
    if shrunk is not None:
        weights.append(MIXTURE[0])
        locs.append(shrunk[0])
        shapes.append(WIDEN**2 * shrunk[1])
    for wc, c in zip(w, comps):
        m, S = _moments(subject.z[c][:, cols])
        if shrunk is None:
            m_star, S_star = _shrunk(m, S, v0, pop_mean, pop_var)
            weights.append(MIXTURE[0] * wc)
            locs.append(m_star)
            shapes.append(WIDEN**2 * S_star)
        weights.append(MIXTURE[1] * wc)
        locs.append(m)
        shapes.append(WIDEN**2 * S)
    weights.append(MIXTURE[2])
    locs.append(pop_mean)
    shapes.append(np.diag(WIDEN_POPULATION**2 * (pop_var + moments.var_mean[k, cols])))
    return TMixture(weights, locs, shapes)


def shrunken_moments(draws, weights: np.ndarray, *, min_ess: float = 10.0) -> dict:
    """Per family of a subject's current draws (a :class:`~ibo_pymc.engine.hierarchical.SubjectDraws`): the mean
    and covariance of its shrunken posterior on the family's free columns, from the draws weighted by their
    importance weights averaged over population draws (``weights`` (C, S), each population draw's normalised);
    a family whose weights have an effective sample size below ``min_ess`` per column is left out."""
    out = {}
    for k in np.unique(draws.component_family):
        cols = draws.free_columns(int(k))
        sel = draws.component_family == k
        w = weights[sel].reshape(-1)
        x = draws.z[sel][..., cols].reshape(-1, len(cols))
        if w.sum() <= 0 or w.sum() ** 2 / (w**2).sum() < min_ess * len(cols):
            continue
        w = w / w.sum()
        m = w @ x
        S = (x - m).T @ ((x - m) * w[:, None]) + 1e-8 * np.eye(len(cols))
        out[int(k)] = (m, S)
    return out


def proposal_subject_draws(
    subject, moments: PopulationMoments, rng: np.random.Generator, n: int = 2000, shrunk: dict | None = None
):
    """The subject's :class:`~ibo_pymc.engine.hierarchical.SubjectDraws` with its draws replaced by ``n`` proposal
    draws per family it has (module docstring): one component per family, log evidence 0, ``base`` = log q -
    log-likelihood, ``remedy`` "proposal". ``subject`` is its first-stage draws; ``shrunk``: per family, the
    moments of the shrunken posterior where an earlier refinement's weights give them (:func:`shrunken_moments`;
    the adaptive step of a second round)."""
    fams = [int(k) for k in np.unique(subject.component_family)]
    P = subject.z.shape[2]
    zs, bases = [], []
    for k in fams:
        q = family_proposal(subject, k, moments, (shrunk or {}).get(k))
        cols = subject.free_columns(k)
        x = q.draw(n, rng)
        z = np.zeros((n, P))
        z[:, cols] = x
        base = q.logpdf(x) - subject.loglik(k, z)
        if subject.shape_priors[k] is None:  # the kernel's N(0 | 0, 1) of the unused column 0, cancelled
            base -= _HALF_LOG_2PI
        if not np.isfinite(base).any():
            raise FloatingPointError(
                f"subject {subject.subject}: the likelihood of family {subject.families[k]} is not finite at any "
                "proposal draw"
            )
        zs.append(z)
        bases.append(base)
    return dataclasses.replace(
        subject,
        component_family=np.array(fams),
        log_evidence=np.zeros(len(fams)),
        z=np.stack(zs),
        base=np.stack(bases),
        remedy="proposal",
    )


__all__ = [
    "PopulationMoments",
    "TMixture",
    "family_proposal",
    "population_moments",
    "proposal_subject_draws",
    "shrunken_moments",
]
