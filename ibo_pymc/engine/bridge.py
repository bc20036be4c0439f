"""Marginal likelihood of each family by bridge sampling (Meng & Wong 1996).

The family-conditional posterior ``p(params | theta2, k)`` is sampled by NUTS;
its normalising constant ``Z_k = p(theta2 | k)`` gives the posterior family
probabilities ``P(k | theta2) ∝ Z_k / 3``. Bridge sampling estimates ``Z_k``
from the posterior draws and draws of a proposal g, a multivariate normal
fitted in the unconstrained space, with the iterative optimal bridge
function; it needs no assumption that the posterior is normal (g only has to
overlap it). The posterior draws are split: the first half of every chain
fits g, the second half enters the bridge. The error estimate is the
approximate relative mean-squared error of Frühwirth-Schnatter (2004),
computed with the bridge draws' effective sample size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special


@dataclass(frozen=True)
class BridgeResult:
    log_evidence: float
    rel_error: float  # approximate relative standard error of exp(log_evidence)
    iterations: int


def bridge_sampling(
    draws: np.ndarray,
    log_density: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    *,
    n_eff: float | None = None,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> BridgeResult:
    """log of the normalising constant of ``log_density`` (unnormalised, unconstrained space).

    ``draws`` (chain, draw, dim) are posterior draws in the unconstrained space.
    """
    draws = np.asarray(draws, float)
    C, D, d = draws.shape
    half = D // 2
    fit_part = draws[:, :half].reshape(-1, d)
    bridge = draws[:, half:].reshape(-1, d)
    mean = fit_part.mean(axis=0)
    cov = np.atleast_2d(np.cov(fit_part, rowvar=False)) + 1e-10 * np.eye(d)
    chol = np.linalg.cholesky(cov)
    n1 = len(bridge)
    n2 = n1
    prop = mean + rng.standard_normal((n2, d)) @ chol.T

    def log_g(z):
        r = np.linalg.solve(chol, (z - mean).T)
        return -0.5 * (r**2).sum(axis=0) - np.log(np.diag(chol)).sum() - 0.5 * d * np.log(2 * np.pi)

    l1 = log_density(bridge) - log_g(bridge)
    l2 = log_density(prop) - log_g(prop)
    n1_eff = float(n_eff) if n_eff is not None else float(n1)
    s1 = n1_eff / (n1_eff + n2)
    s2 = n2 / (n1_eff + n2)
    lstar = float(np.median(l1))
    e1 = l1 - lstar
    e2 = l2 - lstar
    log_r = 0.0
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned: iterations used)
        # numerator: mean over proposal draws of e^{l2} / (s1 e^{l2} + s2 r); denominator likewise over bridge draws
        num = special.logsumexp(e2 - np.logaddexp(np.log(s1) + e2, np.log(s2) + log_r)) - np.log(n2)
        den = special.logsumexp(-np.logaddexp(np.log(s1) + e1, np.log(s2) + log_r)) - np.log(n1)
        new = num - den
        if abs(new - log_r) < tol:
            log_r = new
            break
        log_r = new
    # relative MSE (Frühwirth-Schnatter 2004)
    f1 = np.exp(-np.logaddexp(np.log(s1) + e1 - log_r, np.log(s2)))
    f2 = np.exp(e2 - log_r - np.logaddexp(np.log(s1) + e2 - log_r, np.log(s2)))
    re2 = np.var(f2) / (n2 * np.mean(f2) ** 2) + np.var(f1) / (n1_eff * np.mean(f1) ** 2)
    return BridgeResult(log_evidence=float(log_r + lstar), rel_error=float(np.sqrt(re2)), iterations=it)


def bridge_from_draws(z: np.ndarray, log_density, rng: np.random.Generator) -> BridgeResult:
    """Bridge sampling of the normalising constant of ``log_density`` from NUTS draws ``z`` (chain, draw, dim)
    on an unconstrained scale, with the effective sample size of the draws' second halves (the part
    :func:`bridge_sampling` uses for the posterior side) as ``n_eff``; shared by every task's fit."""
    from ibo_pymc.engine.convergence import ess_bulk

    half = z.shape[1] // 2
    ess = min(ess_bulk(z[:, half:, j]) for j in range(z.shape[-1]))
    return bridge_sampling(z, log_density, rng, n_eff=ess)
