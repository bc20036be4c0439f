"""The grid task's surrogates: a Gaussian process (RBF kernel) and the Bayesian mean tracker.

Both give, before every choice t of a round, the posterior mean ``mu`` and
variance ``var`` of the reward of each of the P options (an
:class:`~ibo_pymc.tasks.gridsearch.options.OptionSet`; default Wu et al. 2020's 8 x 8 grid) given the round's
earlier observations (rounds are independent environments; nothing carries
over), and their derivative in the surrogate's one free parameter.

**GP** (Wu et al. 2018, 2020): zero prior mean on the rescaled rewards, RBF kernel
``k(x, x') = exp(-||x - x'||^2 / (2 lambda^2))`` (signal variance 1) on the
option coordinates, observation noise ``NOISE`` = 0.0001. For one round the
Cholesky factor ``L`` of ``K = k(X, X) + noise I`` of *all* its observations is
computed once: the factor of the first ``t`` observations is its leading
``t x t`` block, so with ``W = L^-1 k(X, options)`` and ``a = L^-1 y``

    mu_t = sum_{i<t} W_i a_i,      var_t = 1 - sum_{i<t} W_i^2

give every trial's posterior from one factorisation (O(n^3 + P n^2) per round);
the variance is the predictive one (the noise included, ``1 + noise - ...``), as
the published code computes it.
The derivative in lambda is forward-mode: ``dL = L Phi(L^-1 dK L^-T)`` (``Phi``:
lower triangle, halved diagonal), ``dW = L^-1 (dk - dL W)``, ``da = -L^-1 dL a``.

**Bayesian mean tracker**: independent Kalman filters, prior mean 0 and variance
``BMT_PRIOR_VAR`` = 5, observation noise ``error_variance``: the chosen option's
gain ``g = v / (v + error_variance)``, ``m += g (y - m)``, ``v *= 1 - g``.

Arrays: ``choices`` (R, T) option indices 0..P-1, ``y`` (R, T)
rescaled rewards; outputs (R, T - 1, P): the posterior before choice
``t = 1..T-1`` (the first observation of a round conditions only).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet
from ibo_pymc.tasks.gridsearch.rules import RULES, rule_code

#: the GP's observation noise variance (fixed, as in the published models)
NOISE = 1e-4
#: the 2018 GP code's posterior variance at the one observed option (:func:`gp_posterior`, ``published``)
PUBLISHED_FIRST_VAR = float(np.finfo(float).eps)
#: the Bayesian mean tracker's prior variance
BMT_PRIOR_VAR = 5.0


@numba.njit(cache=True, fastmath={"contract", "reassoc", "arcp"})
def _gp_round(ch, y, n, ktab, dtab, d2i, noise, grad, mu, var, dmu, dvar):
    """Posterior before each choice 1..n-1 of one round with n observations (writes rows 0..n-2).

    ``ktab[d]`` / ``dtab[d]``: the kernel and its lambda-derivative at squared distance ``d``
    (integers), ``d2i`` the (P, P) squared distances between the options as integers.
    """
    m = n - 1  # observations that ever condition a prediction
    if m <= 0:
        return
    P = d2i.shape[0]
    L = np.zeros((m, m))
    for j in range(m):
        s = 1.0 + noise
        for k in range(j):
            s -= L[j, k] * L[j, k]
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, m):
            s = ktab[d2i[ch[i], ch[j]]]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    # W = L^-1 k(X, options), a = L^-1 y (row by row; inner loops run over the options, contiguous)
    W = np.empty((m, P))
    a = np.empty(m)
    for i in range(m):
        s = y[i]
        for k in range(i):
            s -= L[i, k] * a[k]
        inv = 1.0 / L[i, i]
        a[i] = s * inv
        ci = ch[i]
        row = W[i]
        for p in range(P):
            row[p] = ktab[d2i[ci, p]]
        for k in range(i):
            lik = L[i, k]
            wk = W[k]
            for p in range(P):
                row[p] -= lik * wk[p]
        for p in range(P):
            row[p] *= inv
    for p in range(P):
        mu[0, p] = W[0, p] * a[0]
        var[0, p] = 1.0 + noise - W[0, p] * W[0, p]
    for t in range(1, m):
        at = a[t]
        wt = W[t]
        for p in range(P):
            mu[t, p] = mu[t - 1, p] + wt[p] * at
            var[t, p] = var[t - 1, p] - wt[p] * wt[p]
    for t in range(m):
        for p in range(P):
            if var[t, p] < 1e-12:
                var[t, p] = 1e-12
    if not grad:
        return
    # forward-mode derivative in lambda: B = L^-1 dK L^-T (solve L C = dK, then L B = C^T)
    C = np.empty((m, m))
    for j in range(m):
        for i in range(m):
            s = dtab[d2i[ch[i], ch[j]]]
            for k in range(i):
                s -= L[i, k] * C[k, j]
            C[i, j] = s / L[i, i]
    B = np.empty((m, m))
    for j in range(m):
        for i in range(j, m):  # only the lower triangle of B is used
            s = C[j, i]
            for k in range(j):  # B is symmetric: B[k, j] = B[j, k], already computed
                s -= L[i, k] * B[j, k]
            for k in range(j, i):
                s -= L[i, k] * B[k, j]
            B[i, j] = s / L[i, i]
    dL = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1):
            s = 0.5 * L[i, j] * B[j, j]
            for k in range(j + 1, i + 1):
                s += L[i, k] * B[k, j]
            dL[i, j] = s
    dW = np.empty((m, P))
    da = np.empty(m)
    for i in range(m):
        s = 0.0
        for k in range(i + 1):
            s -= dL[i, k] * a[k]
        for k in range(i):
            s -= L[i, k] * da[k]
        inv = 1.0 / L[i, i]
        da[i] = s * inv
        ci = ch[i]
        row = dW[i]
        for p in range(P):
            row[p] = dtab[d2i[ci, p]]
        for k in range(i + 1):
            dl = dL[i, k]
            wk = W[k]
            for p in range(P):
                row[p] -= dl * wk[p]
        for k in range(i):
            lik = L[i, k]
            dwk = dW[k]
            for p in range(P):
                row[p] -= lik * dwk[p]
        for p in range(P):
            row[p] *= inv
    for p in range(P):
        dmu[0, p] = dW[0, p] * a[0] + W[0, p] * da[0]
        dvar[0, p] = -2.0 * W[0, p] * dW[0, p]
    for t in range(1, m):
        at = a[t]
        dat = da[t]
        wt = W[t]
        dwt = dW[t]
        for p in range(P):
            dmu[t, p] = dmu[t - 1, p] + dwt[p] * at + wt[p] * dat
            dvar[t, p] = dvar[t - 1, p] - 2.0 * wt[p] * dwt[p]
    for t in range(m):
        for p in range(P):
            if var[t, p] <= 1e-12:
                dvar[t, p] = 0.0


@numba.njit(cache=True)
def _kernel_tables(lam, d2i):
    """The RBF kernel ``ktab[d]`` and its lambda-derivative ``dtab[d]`` at every squared distance ``d`` (integers)
    of the options' ``d2i``: what :func:`_gp_round` reads."""
    P = d2i.shape[0]
    nd = 0
    for i in range(P):
        for j in range(P):
            nd = max(nd, d2i[i, j] + 1)
    ktab = np.empty(nd)
    dtab = np.empty(nd)
    for d in range(nd):
        ktab[d] = math.exp(-d / (2.0 * lam * lam))
        dtab[d] = ktab[d] * d / (lam * lam * lam)
    return ktab, dtab


@numba.njit(cache=True)
def _gp_all(choices, y, lengths, lam, d2i, noise, grad):
    R, T = choices.shape
    P = d2i.shape[0]
    ktab, dtab = _kernel_tables(lam, d2i)
    mu = np.zeros((R, T - 1, P))
    var = np.full((R, T - 1, P), 1.0 + noise)
    dmu = np.zeros((R, T - 1, P))
    dvar = np.zeros((R, T - 1, P))
    for r in range(R):
        _gp_round(choices[r], y[r], lengths[r], ktab, dtab, d2i, noise, grad, mu[r], var[r], dmu[r], dvar[r])
    return mu, var, dmu, dvar


#: the tabulated GP posterior (:func:`gp_table`): node spacing on u = log(lambda), how many prior standard
#: deviations either side of the prior's centre the nodes cover, and the largest table built (bytes; a larger
#: participant is sampled with the exact posterior)
GP_TABLE_STEP, GP_TABLE_WIDTH, GP_TABLE_MAX_BYTES = 0.05, 3.0, 400e6


@numba.njit(cache=True)
def _gp_table(choices, y, lengths, d2i, noise, lo, h, K):
    """``(K, R, T - 1, P, 4)``: at each node ``u_k = lo + k h``, the posterior's mean, ``h`` times its derivative
    in u, its variance and ``h`` times that derivative. Node-major: the interpolation between two nodes reads two
    contiguous blocks (the posterior's layout, four numbers per option), which streams; an option-major layout
    (a node's numbers beside its neighbour's) took 1.5 times as long on the 8 x 8 grid, the same values."""
    R, T = choices.shape
    P = d2i.shape[0]
    tab = np.zeros((K, R, T - 1, P, 4))
    for k in range(K):
        lam = math.exp(lo + k * h)
        mu, var, dmu, dvar = _gp_all(choices, y, lengths, lam, d2i, noise, True)
        for r in range(R):
            for t in range(lengths[r] - 1):
                for p in range(P):
                    row = tab[k, r, t, p]
                    row[0] = mu[r, t, p]
                    row[1] = dmu[r, t, p] * lam * h
                    row[2] = var[r, t, p]
                    row[3] = dvar[r, t, p] * lam * h
    return tab


@numba.njit(cache=True)
def _in_table(tab, lo, h, lam):
    """Whether ``lam`` lies within the nodes ``lo + k h`` of the table ``tab`` (:func:`_gp_table`; none has
    fewer than two)."""
    K = tab.shape[0]
    return K >= 2 and lo <= math.log(lam) <= lo + (K - 1) * h


@numba.njit(cache=True, fastmath={"contract"})
def _gp_interp(tab, lengths, lo, h, lam, noise):
    """The GP posterior at ``lam`` from the table of :func:`_gp_table` (``lam`` within its nodes): the cubic
    Hermite interpolant in u = log(lambda) of each mean and variance between the two nodes around u, and the
    interpolant's derivative (in lambda); the layout and the variance's floor of :func:`_gp_all`."""
    K, R, T1, P, _ = tab.shape
    u = (math.log(lam) - lo) / h
    k = min(max(int(math.floor(u)), 0), K - 2)
    s = u - k
    s2 = s * s
    s3 = s2 * s
    h00 = 2.0 * s3 - 3.0 * s2 + 1.0
    h10 = s3 - 2.0 * s2 + s
    h01 = 1.0 - h00
    h11 = s3 - s2
    sc = 1.0 / (h * lam)  # the nodes' derivatives are h d/du; d/dlambda = (1 / lambda) d/du
    g00 = (6.0 * s2 - 6.0 * s) * sc
    g10 = (3.0 * s2 - 4.0 * s + 1.0) * sc
    g11 = (3.0 * s2 - 2.0 * s) * sc
    mu = np.zeros((R, T1, P))
    var = np.full((R, T1, P), 1.0 + noise)
    dmu = np.zeros((R, T1, P))
    dvar = np.zeros((R, T1, P))
    below = tab[k]
    above = tab[k + 1]
    for r in range(R):
        for t in range(lengths[r] - 1):
            for p in range(P):
                a = below[r, t, p]
                b = above[r, t, p]
                mu[r, t, p] = h00 * a[0] + h10 * a[1] + h01 * b[0] + h11 * b[1]
                dmu[r, t, p] = g00 * (a[0] - b[0]) + g10 * a[1] + g11 * b[1]
                v = h00 * a[2] + h10 * a[3] + h01 * b[2] + h11 * b[3]
                if v < 1e-12:
                    var[r, t, p] = 1e-12
                else:
                    var[r, t, p] = v
                    dvar[r, t, p] = g00 * (a[2] - b[2]) + g10 * a[3] + g11 * b[3]
    return mu, var, dmu, dvar


def gp_table_nodes(prior_mean: float, prior_sd: float) -> tuple[float, float, int]:
    """``(lo, h, K)``: the table's nodes for a log-normal prior on lambda (:data:`GP_TABLE_WIDTH` prior standard
    deviations either side of its centre, :data:`GP_TABLE_STEP` apart)."""
    K = int(math.ceil(2.0 * GP_TABLE_WIDTH * prior_sd / GP_TABLE_STEP)) + 1
    return prior_mean - GP_TABLE_WIDTH * prior_sd, GP_TABLE_STEP, K


def gp_table(choices, y, lo: float, h: float, K: int, *, lengths=None, noise=NOISE, options: OptionSet = GRID_8X8):
    """The GP posterior of :func:`gp_posterior` (plain rule) tabulated at ``K`` nodes ``lo + k h`` of
    u = log(lambda), for the sampler's interpolated posterior (:func:`gp_interpolated`), or None where the table
    would exceed :data:`GP_TABLE_MAX_BYTES`.

    Why: the posterior depends on lambda alone, and refactorising it at every gradient is most of a GP fit's
    cost (about 60% of a UCB gradient on the 11 x 11 grid). Between two nodes the mean and variance of every
    option before every choice are cubic Hermite interpolants in u (values and exact derivatives at both
    nodes): continuously differentiable, so NUTS samples the interpolated density exactly, with the gradient
    of what it evaluates. The difference from the exact density is measured at every fit's draws
    (:meth:`.density.GridDensity.sampling_error`)."""
    choices = np.ascontiguousarray(choices, dtype=np.int64)
    R, T = choices.shape
    if R * max(T - 1, 0) * options.size * K * 4 * 8 > GP_TABLE_MAX_BYTES or K < 2:
        return None
    return _gp_table(
        choices,
        np.ascontiguousarray(y, dtype=float),
        observation_lengths(choices, lengths),
        options.sqdist,
        float(noise),
        float(lo),
        float(h),
        int(K),
    )


def gp_interpolated(table, lo: float, h: float, lam: float, *, lengths=None, noise=NOISE):
    """The table's posterior at ``lam`` (:func:`gp_table`): ``(mu, var, dmu, dvar)`` as :func:`gp_posterior`
    with ``grad``; ``lam`` must lie within the nodes."""
    K, R, T1, _, _ = table.shape
    if not _in_table(table, float(lo), float(h), float(lam)):
        raise ValueError(f"lambda {lam} is outside the table's nodes ({math.exp(lo)}..{math.exp(lo + (K - 1) * h)})")
    lengths = observation_lengths(np.zeros((R, T1 + 1)), lengths)
    return _gp_interp(table, lengths, float(lo), float(h), float(lam), float(noise))


@numba.njit(cache=True)
def _bmt_all(choices, y, lengths, err, prior_var, P, grad):
    R, T = choices.shape
    mu = np.zeros((R, T - 1, P))
    var = np.empty((R, T - 1, P))
    dmu = np.zeros((R, T - 1, P))
    dvar = np.zeros((R, T - 1, P))
    for r in range(R):
        m = np.zeros(P)
        v = np.full(P, prior_var)
        dm = np.zeros(P)
        dv = np.zeros(P)
        for t in range(lengths[r] - 1):
            j = choices[r, t]
            g = v[j] / (v[j] + err)
            # d g / d err (v depends on err through earlier updates)
            dg = (dv[j] * (v[j] + err) - v[j] * (dv[j] + 1.0)) / ((v[j] + err) ** 2)
            resid = y[r, t] - m[j]
            dm[j] = dm[j] + dg * resid - g * dm[j]
            m[j] = m[j] + g * resid
            dv[j] = dv[j] * (1.0 - g) - v[j] * dg
            v[j] = v[j] * (1.0 - g)
            for p in range(P):
                mu[r, t, p] = m[p]
                var[r, t, p] = v[p]
                if grad:
                    dmu[r, t, p] = dm[p]
                    dvar[r, t, p] = dv[p]
        for t in range(max(lengths[r] - 1, 0), T - 1):
            for p in range(P):
                var[r, t, p] = prior_var
    return mu, var, dmu, dvar


def observation_lengths(choices, lengths=None) -> np.ndarray:
    """Each round's number of observations (R,) for the kernels: ``lengths`` checked to be whole numbers in
    1..T, or every round full (T) when None (rounds shorter than T are padded at the end)."""
    R, T = np.shape(choices)
    if lengths is None:
        return np.full(R, T, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if lengths.shape != (R,) or (lengths < 1).any() or (lengths > T).any():
        raise ValueError(f"lengths must be {R} numbers of observations in 1..{T}")
    return lengths


def gp_posterior(
    choices, y, lam, *, lengths=None, grad=False, noise=NOISE, published=False, options: OptionSet = GRID_8X8
):
    """GP posterior mean and variance before every choice: ``(mu, var, dmu, dvar)``, each (R, T-1, P) over the
    ``options``.

    ``dmu``, ``dvar`` are the derivatives in ``lam`` (zeros unless ``grad``).
    ``lengths`` (R,) the observations per round (default: all T).

    ``published`` (a choice rule of :data:`~ibo_pymc.tasks.gridsearch.rules.RULES`, true but
    for ``"plain"``) reproduces one detail of the published GP code: with a
    single observation, the option observed gets the noise added to its
    cross-covariance too (the kernel adds it whenever its two inputs are
    identical), so its posterior is mean = the observed reward and variance
    ``(1 + n) - (1 + n)^2 / (1 + n)``, zero but for rounding. The 2018 code computes it
    as ``-2^-52`` (through the inverse of the Cholesky factor) and takes its absolute
    value, so under ``"wu2018"`` and ``"wu2018-line"`` the variance is machine epsilon
    and the standard deviation ``sqrt(machine epsilon)``, which that code's probability
    of improvement, whose ``z`` adds the same ``sqrt(machine epsilon)`` to the standard
    deviation, turns into ``z = 1/2`` at that option (with 0, PI misses the authors'
    saved per-fold results by up to 1.5 nats; with it, they agree to 1e-8). Under
    ``"wu2020"`` (``True``) it is 0, as the 2020 reproduction was validated and made
    with; its families (UCB, mean, variance) move by 1e-8 at most between the two.
    """
    rule = rule_code(published)  # an unknown rule is refused, not taken for the 2020 one
    choices = np.ascontiguousarray(choices, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=float)
    mu, var, dmu, dvar = _gp_all(
        choices, y, observation_lengths(choices, lengths), float(lam), options.sqdist, float(noise), bool(grad)
    )
    if rule != RULES["plain"] and choices.shape[1] > 1:
        rows = np.arange(choices.shape[0])
        first = choices[:, 0]
        mu[rows, 0, first] = y[:, 0]
        var[rows, 0, first] = PUBLISHED_FIRST_VAR if rule >= RULES["wu2018"] else 0.0
        dmu[rows, 0, first] = 0.0
        dvar[rows, 0, first] = 0.0
    return mu, var, dmu, dvar


def bmt_posterior(
    choices, y, error_variance, *, lengths=None, grad=False, prior_var=BMT_PRIOR_VAR, options: OptionSet = GRID_8X8
):
    """Bayesian mean tracker posterior before every choice (same layout as :func:`gp_posterior`);
    derivatives in ``error_variance``."""
    choices = np.ascontiguousarray(choices, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=float)
    return _bmt_all(
        choices,
        y,
        observation_lengths(choices, lengths),
        float(error_variance),
        float(prior_var),
        options.size,
        bool(grad),
    )


def gp_posterior_reference(choices, y, lam, noise=NOISE, options: OptionSet = GRID_8X8):
    """The GP posterior by direct solves, one trial at a time (NumPy; for tests)."""
    choices = np.asarray(choices)
    R, T = choices.shape
    mu = np.zeros((R, T - 1, options.size))
    var = np.full((R, T - 1, options.size), 1.0 + noise)
    kern = np.exp(-options.sqdist / (2 * lam**2))
    for r in range(R):
        for t in range(1, T):
            obs = choices[r, :t]
            K = kern[np.ix_(obs, obs)] + noise * np.eye(t)
            ks = kern[obs]
            sol = np.linalg.solve(K, ks)
            mu[r, t - 1] = sol.T @ y[r, :t]
            var[r, t - 1] = 1.0 + noise - (ks * sol).sum(0)
    return mu, var
