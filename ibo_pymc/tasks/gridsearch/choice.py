"""The grid task's acquisition families and softmax choice rule, with analytic gradients.

Before choice t of a round the surrogate gives every option's posterior mean
``mu`` and standard deviation ``s = sqrt(var)``; the family turns them into a
value ``q`` and the choice follows the softmax with temperature tau,
``P(option j) = exp(q_j / tau) / sum_i exp(q_i / tau)``. Families (the
acquisition functions of Wu et al. 2018, 2020; ``y*`` the best reward seen so
far in the round, ``z = (mu - y*) / s``):

======== ======================================= ==========
UCB      ``q = mu + beta s``                     beta
EI       ``q = (mu - y*) Phi(z) + s phi(z)``     --
PI       ``q = Phi(z)``                          --
mean     ``q = mu`` (pure exploitation)          --
variance ``q = s`` (pure exploration)            --
======== ======================================= ==========

``published=True`` evaluates the choice rule exactly as the published fitting
code does (for the reproduction of its maximum-likelihood fits): q of UCB, mean
and variance clamped to [0.0001, 100], and the chosen option's probability
clamped to [1e-5, 0.99999] (without renormalising). The Bayesian model uses the
plain rule (``published=False``): no clamps, so the density is smooth.

The kernel returns each round's log-likelihood and its gradient in (surrogate
parameter, beta, tau), given the surrogate's derivatives ``dmu``, ``dvar``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ibo_pymc.tasks.gridsearch.surrogate import observation_lengths

#: family name -> code of the kernel
FAMILIES = {"UCB": 0, "EI": 1, "PI": 2, "mean": 3, "variance": 4}
#: families with the exploration bonus beta
HAS_BETA = {"UCB"}

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)


def family_code(family: str) -> int:
    try:
        return FAMILIES[family]
    except KeyError:
        raise ValueError(f"unknown acquisition family {family!r}; expected one of {', '.join(FAMILIES)}") from None


@numba.njit(cache=True)
def _loglik_kernel(mu, var, dmu, dvar, choices, y, lengths, family, beta, tau, published, ll, grad):
    """Per round r: ``ll[r]`` and ``grad[r] = d ll[r] / d (theta, beta, tau)`` (theta: the surrogate's parameter)."""
    R = mu.shape[0]
    P = mu.shape[2]
    q = np.empty(P)
    e = np.empty(P)
    qth = np.empty(P)
    qb = np.empty(P)
    for r in range(R):
        tot = 0.0
        g0 = 0.0
        g1 = 0.0
        g2 = 0.0
        best = y[r, 0]
        for t in range(lengths[r] - 1):
            if t > 0 and y[r, t] > best:
                best = y[r, t]
            c = choices[r, t + 1]
            for p in range(P):
                v = var[r, t, p]
                s = math.sqrt(v)
                ds = dvar[r, t, p] / (2.0 * s) if s > 0.0 else 0.0
                m = mu[r, t, p]
                dm = dmu[r, t, p]
                if family == 0:
                    qv = m + beta * s
                    qt = dm + beta * ds
                    qbv = s
                elif family == 1:
                    z = (m - best) / s
                    cdf = 0.5 * math.erfc(-z * _INV_SQRT2)
                    pdf = _INV_SQRT2PI * math.exp(-0.5 * z * z)
                    qv = (m - best) * cdf + s * pdf
                    qt = cdf * dm + pdf * ds
                    qbv = 0.0
                elif family == 2:
                    z = (m - best) / s
                    cdf = 0.5 * math.erfc(-z * _INV_SQRT2)
                    pdf = _INV_SQRT2PI * math.exp(-0.5 * z * z)
                    qv = cdf
                    qt = pdf / s * dm - pdf * z / s * ds
                    qbv = 0.0
                elif family == 3:
                    qv = m
                    qt = dm
                    qbv = 0.0
                else:
                    qv = s
                    qt = ds
                    qbv = 0.0
                if published and family != 1 and family != 2:
                    if qv < 0.0001:
                        qv, qt, qbv = 0.0001, 0.0, 0.0
                    elif qv > 100.0:
                        qv, qt, qbv = 100.0, 0.0, 0.0
                q[p] = qv
                qth[p] = qt
                qb[p] = qbv
            mx = q[0]
            for p in range(1, P):
                if q[p] > mx:
                    mx = q[p]
            se = 0.0
            for p in range(P):
                e[p] = math.exp((q[p] - mx) / tau)
                se += e[p]
            lse = mx / tau + math.log(se)
            lp = q[c] / tau - lse
            if published and lp < math.log(1e-5):
                tot += math.log(1e-5)
                continue
            if published and lp > math.log(0.99999):
                tot += math.log(0.99999)
                continue
            tot += lp
            # d lp / d q_p = (delta_pc - p_p) / tau ;  d lp / d tau = -(q_c - E_p q) / tau^2
            eq = 0.0
            eth = 0.0
            eb = 0.0
            for p in range(P):
                pp = e[p] / se
                eq += pp * q[p]
                eth += pp * qth[p]
                eb += pp * qb[p]
            g0 += (qth[c] - eth) / tau
            g1 += (qb[c] - eb) / tau
            g2 += -(q[c] - eq) / (tau * tau)
        ll[r] = tot
        grad[r, 0] = g0
        grad[r, 1] = g1
        grad[r, 2] = g2


def choice_loglik(post, choices, y, family, beta, tau, *, lengths=None, published=False):
    """Each round's log-likelihood of the choices 2..T and its gradient in (theta, beta, tau).

    ``post`` is a surrogate's ``(mu, var, dmu, dvar)``; returns ``(ll (R,), grad (R, 3))``.
    ``published=True`` is the authors' rule for their UCB-type models (clamped q and probabilities; their GP
    gives zero variance at observed options), which EI and PI (a division by the standard deviation) lack.
    """
    code = family_code(family) if isinstance(family, str) else int(family)
    if published and code in (1, 2):
        raise ValueError("the published choice rule (published=True) applies to UCB, mean and variance, not EI or PI")
    mu, var, dmu, dvar = post
    choices = np.ascontiguousarray(choices, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=float)
    R = choices.shape[0]
    lengths = observation_lengths(choices, lengths)
    ll = np.empty(R)
    grad = np.empty((R, 3))
    _loglik_kernel(
        mu,
        var,
        dmu,
        dvar,
        choices,
        y,
        lengths,
        code,
        float(beta),
        float(tau),
        bool(published),
        ll,
        grad,
    )
    return ll, grad


def choice_probabilities(mu, var, best, family, beta, tau):
    """Softmax choice probabilities over the options (last axis) for arrays of posteriors (NumPy; plain rule)."""
    from scipy import special, stats

    s = np.sqrt(var)
    best = np.asarray(best, float)
    if family == "UCB":
        q = mu + beta * s
    elif family in ("EI", "PI"):
        z = (mu - best[..., None]) / s
        q = (mu - best[..., None]) * stats.norm.cdf(z) + s * stats.norm.pdf(z) if family == "EI" else stats.norm.cdf(z)
    elif family == "mean":
        q = mu
    elif family == "variance":
        q = s
    else:
        family_code(family)
    return special.softmax(q / tau, axis=-1)
