"""The grid task's log-density on the unconstrained (log) scale: one Numba kernel, three front ends.

A fit's parameters are the surrogate's ``theta`` (lambda or error_variance),
``beta`` (UCB only) and ``tau``, each with a log-normal prior, i.e. a normal
prior on ``x = log(parameter)``; the unconstrained point is ``x``. The
density is ``sum_r loglik_r(exp(x)) + sum_j log N(x_j; m_j, s_j)`` with its
gradient in ``x``. It serves

* :class:`~ibo_pymc.tasks.gridsearch.op.GridLogLik`, the PyTensor Op of the PyMC model (per-round
  log-likelihood with its analytic gradient; in a module of its own, so that a fit, which samples with nutpie,
  never imports PyTensor: 1.2 s of every process's start),
* :func:`compile_nutpie`, nutpie's compiled model from a cached C callback (no
  per-process compilation: the callback is compiled once per machine) through the engine's adapter,
* :func:`log_density`, the same density at many points (bridge sampling).

Data buffer (float64): header ``[R, T, family, surrogate, n_dim, m_0, s_0, m_1, s_1, m_2, s_2, P, S, K, lo, h]``,
then
the observations per round (R; a round shorter than T is padded), the choices (R*T), the rescaled rewards
(R*T), the options' squared distances (P*P; an :class:`~ibo_pymc.tasks.gridsearch.options.OptionSet`) and the
local families' weights (P*P; :func:`~ibo_pymc.tasks.gridsearch.choice.local_weights`, ones for the others) and
PMU's S draws of the P options (S*P; :func:`~ibo_pymc.tasks.gridsearch.choice.pmu_draws`; S = 0 for the others)
and, in the buffer NUTS samples a GP family with (:meth:`GridDensity.nutpie_model`), the GP posterior tabulated at
K nodes ``lo + k h`` of log(lambda) (R*(T-1)*P*K*4; :func:`~ibo_pymc.tasks.gridsearch.surrogate.gp_table`; K = 0
elsewhere: the exact posterior).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ibo_pymc.engine.density import (
    EXPAND_SIGNATURE,
    LOGP_SIGNATURE,
    Density,
    compiled_nutpie_model,
    finish,
)
from ibo_pymc.tasks.gridsearch.choice import (
    LOCAL,
    NO_DRAWS,
    NO_WEIGHTS,
    _choice_scratch,
    _loglik_kernel,
    _loglik_values,
    _round_values,
    family_code,
    family_draws,
    local_weights,
)
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet
from ibo_pymc.tasks.gridsearch.surrogate import (
    BMT_PRIOR_VAR,
    NOISE,
    _bmt_all,
    _gp_all,
    _gp_interp,
    _gp_round,
    _in_table,
    _kernel_tables,
    observation_lengths,
)

SURROGATE_CODE = {"GP": 0, "BMT": 1}
_H = 16
#: no table (the exact GP posterior)
NO_TABLE = np.zeros((0, 0, 0, 0, 4))
#: how many of a family's draws :meth:`GridDensity.sampling_error` checks
ERROR_CHECKS = 400
_LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True)
def _round_loglik(choices, y, lengths, d2i, wloc, eps, surrogate, family, theta, beta, tau, grad, tab, lo, h):
    """Per-round log-likelihood (R,) and, with ``grad``, its gradient (R, 3) in (theta, beta, tau) (else zeros:
    the value-only kernel, :func:`~.choice._loglik_values`); the plain choice rule.
    ``lengths`` (R,) the observations of each round, ``d2i`` the options' squared distances (P, P), ``wloc`` the
    local families' weights (P, P), ``eps`` PMU's draws (S, P); ``tab`` the GP posterior's table at nodes
    ``lo + k h`` of log(lambda) (:data:`NO_TABLE`: none), used for a GP at a lambda within its nodes."""
    R = choices.shape[0]
    if surrogate == 0 and _in_table(tab, lo, h, theta):
        mu, var, dmu, dvar = _gp_interp(tab, lengths, lo, h, theta, NOISE)
    elif surrogate == 0 and not grad:
        return _gp_values(choices, y, lengths, d2i, wloc, eps, family, theta, beta, tau), np.zeros((R, 3))
    elif surrogate == 0:
        mu, var, dmu, dvar = _gp_all(choices, y, lengths, theta, d2i, NOISE, grad)
    else:
        mu, var, dmu, dvar = _bmt_all(choices, y, lengths, theta * theta, BMT_PRIOR_VAR, d2i.shape[0], grad)
        dmu *= 2.0 * theta
        dvar *= 2.0 * theta
    ll = np.empty(R)
    if grad:
        g = np.empty((R, 3))
        _loglik_kernel(mu, var, dmu, dvar, choices, y, lengths, family, beta, tau, 0, wloc, eps, ll, g)
    else:  # the values alone (the same to the bit), the gradient zeros
        g = np.zeros((R, 3))
        _loglik_values(mu, var, choices, y, lengths, family, beta, tau, 0, wloc, eps, ll)
    return ll, g


@numba.njit(cache=True)
def _gp_values(choices, y, lengths, d2i, wloc, eps, family, lam, beta, tau):
    """Per-round log-likelihood (R,) under the exact GP posterior, round by round: each round's posterior
    (:func:`~.surrogate._gp_round`) goes into one round's buffers, reused, and its choices are scored from them
    at once (:func:`~.choice._round_values`), where the whole posterior (R, T - 1, P) with its derivatives,
    written out first, was 350 kB per evaluation on the 8 x 8 grid (9 rounds of 20 choices), read back from
    memory; the same values to the bit (the kernels' arithmetic is unchanged; a round reads only the rows its own
    posterior wrote)."""
    R, T = choices.shape
    P = d2i.shape[0]
    ktab, dtab = _kernel_tables(lam, d2i)
    mu = np.zeros((T - 1, P))
    var = np.full((T - 1, P), 1.0 + NOISE)
    work = _choice_scratch(P)
    ll = np.empty(R)
    for r in range(R):
        # no derivatives: _gp_round writes mu and var only (its dmu, dvar arguments are not touched)
        _gp_round(choices[r], y[r], lengths[r], ktab, dtab, d2i, NOISE, False, mu, var, mu, var)
        ll[r] = _round_values(mu, var, choices[r], y[r], lengths[r], family, beta, tau, 0, wloc, eps, work)
    return ll


@numba.njit(cache=True)
def _unpack(buf):
    # the float parts are views of the buffer (the rewards, the local weights, the PMU draws: up to S x P values
    # that a copy would move at every gradient); the integer parts are converted, the squared distances once per
    # call (P x P)
    R = int(buf[0])
    T = int(buf[1])
    P = int(buf[11])
    S = int(buf[12])
    lengths = np.empty(R, dtype=np.int64)
    choices = np.empty((R, T), dtype=np.int64)
    d2i = np.empty((P, P), dtype=np.int64)
    for r in range(R):
        lengths[r] = int(buf[_H + r])
    off = _H + R
    for r in range(R):
        for t in range(T):
            choices[r, t] = int(buf[off + r * T + t])
    y = buf[off + R * T : off + 2 * R * T].reshape((R, T))
    off += 2 * R * T
    for i in range(P):
        for j in range(P):
            d2i[i, j] = int(buf[off + i * P + j])
    wloc = buf[off + P * P : off + 2 * P * P].reshape((P, P))
    off += 2 * P * P
    if S > 0:
        eps = buf[off : off + S * P].reshape((S, P))
    else:
        eps = np.zeros((1, 1))
    off += S * P
    K = int(buf[13])
    if K > 0:
        tab = buf[off : off + K * R * (T - 1) * P * 4].reshape((K, R, T - 1, P, 4))
    else:
        tab = np.zeros((0, 0, 0, 0, 4))
    return choices, y, lengths, d2i, wloc, eps, tab


@numba.njit(cache=True)
def _density_at(x, buf, choices, y, lengths, d2i, wloc, eps, tab, out, grad):
    family = int(buf[2])
    surrogate = int(buf[3])
    n_dim = int(buf[4])
    theta = math.exp(x[0])
    if n_dim == 3:
        beta = math.exp(x[1])
        tau = math.exp(x[2])
    else:
        beta = 0.0
        tau = math.exp(x[1])
    ll, g = _round_loglik(
        choices, y, lengths, d2i, wloc, eps, surrogate, family, theta, beta, tau, grad, tab, buf[14], buf[15]
    )
    total = 0.0
    for r in range(ll.shape[0]):
        total += ll[r]
    for j in range(n_dim):
        m = buf[5 + 2 * j]
        s = buf[6 + 2 * j]
        z = (x[j] - m) / s
        total += -0.5 * z * z - math.log(s) - 0.5 * _LOG_2PI
        if grad:
            out[j] = -z / s
    if grad:
        g0 = 0.0
        g1 = 0.0
        g2 = 0.0
        for r in range(ll.shape[0]):
            g0 += g[r, 0]
            g1 += g[r, 1]
            g2 += g[r, 2]
        out[0] += g0 * theta
        if n_dim == 3:
            out[1] += g1 * beta
            out[2] += g2 * tau
        else:
            out[1] += g2 * tau
    return total


@numba.njit(cache=True, parallel=True)
def _density_many(X, buf):
    choices, y, lengths, d2i, wloc, eps, tab = _unpack(buf)
    out = np.empty(X.shape[0])
    for i in numba.prange(X.shape[0]):
        g = np.empty(X.shape[1])
        out[i] = _density_at(X[i], buf, choices, y, lengths, d2i, wloc, eps, tab, g, False)
    return out


@numba.njit(cache=True, parallel=True)
def _round_loglik_many(choices, y, lengths, d2i, wloc, eps, surrogate, family, theta, beta, tau):
    out = np.empty((theta.shape[0], choices.shape[0]))
    for i in numba.prange(theta.shape[0]):
        out[i] = _round_loglik(
            choices, y, lengths, d2i, wloc, eps, surrogate, family, theta[i], beta[i], tau[i], False, NO_TABLE, 0.0, 0.0
        )[0]
    return out


def round_loglik_many(
    choices, y, surrogate: str, family: str, theta, beta, tau, *, lengths=None, options: OptionSet = GRID_8X8
) -> np.ndarray:
    """Per-round log-likelihood (n, R) at n parameter points (plain choice rule), in parallel.

    A point whose theta or tau is not positive and finite raises :class:`FloatingPointError` before the kernel
    runs: the kernel divides by both, and an exception inside its parallel loop does not reach the caller
    reliably (a ``SystemError``, or rows left unwritten). Moment matching in the LOO meets such points (tau
    underflowing to 0 at log tau -1e13) and gives up on the component
    (:class:`~ibo_pymc.engine.loo.UndefinedDensity`)."""
    arr = [np.ascontiguousarray(v, dtype=float) for v in (theta, beta, tau)]
    outside = ~((arr[0] > 0) & (arr[0] < np.inf) & (arr[2] > 0) & (arr[2] < np.inf))
    if outside.any():
        raise FloatingPointError(
            f"{int(outside.sum())} of {outside.size} parameter points have theta or tau outside (0, inf), where the "
            "choice rule is not defined"
        )
    return _round_loglik_many(
        np.ascontiguousarray(choices, dtype=np.int64),
        np.ascontiguousarray(y, dtype=float),
        observation_lengths(choices, lengths),
        options.sqdist,
        _weights(family, options),
        family_draws(family, options.size),
        SURROGATE_CODE[surrogate],
        family_code(family),
        *arr,
    )


def _weights(family: str, options: OptionSet) -> np.ndarray:
    """The local weights the kernel reads for ``family`` (the corrected distance; ones if it is not local)."""
    return local_weights(options) if family_code(family) >= LOCAL else NO_WEIGHTS


def pack(
    choices, y, surrogate: str, family: str, prior: np.ndarray, *, lengths=None, options: OptionSet = GRID_8X8
) -> np.ndarray:
    """The data buffer; ``prior`` (n_dim, 2) the normal priors' mean and sd of each log-parameter; ``lengths``
    the observations per round (default: all T), ``options`` what the choices index."""
    choices = np.asarray(choices)
    R, T = choices.shape
    prior = np.asarray(prior, float)
    head = np.zeros(_H)
    head[:5] = [R, T, family_code(family), SURROGATE_CODE[surrogate], len(prior)]
    head[5 : 5 + prior.size] = prior.ravel()
    head[11] = options.size
    draws = family_draws(family, options.size)
    head[12] = 0 if draws is NO_DRAWS else len(draws)
    parts = [
        head,
        observation_lengths(choices, lengths),
        choices.ravel(),
        np.asarray(y, float).ravel(),
        options.sqdist.ravel(),
        np.broadcast_to(_weights(family, options), (options.size, options.size)).ravel(),
        draws.ravel() if head[12] else np.zeros(0),
    ]
    return np.ascontiguousarray(np.concatenate([np.asarray(a, float) for a in parts]))


def with_table(buf: np.ndarray, table: np.ndarray, lo: float, h: float) -> np.ndarray:
    """The data buffer with the GP posterior's table (:func:`~.surrogate.gp_table`) at nodes ``lo + k h``
    appended: the density it gives interpolates the posterior for lambda within the nodes."""
    out = np.empty(len(buf) + table.size)
    out[: len(buf)] = buf
    out[13:16] = table.shape[0], lo, h
    out[len(buf) :] = table.ravel()
    return out


def log_density(buf: np.ndarray, X) -> np.ndarray:
    """The log-density at each row of ``X`` (n, n_dim), unconstrained."""
    X = np.atleast_2d(np.asarray(X, float))
    return _density_many(np.ascontiguousarray(X), buf)


def log_density_grad(buf: np.ndarray, x) -> tuple[float, np.ndarray]:
    choices, y, lengths, d2i, wloc, eps, tab = _unpack(buf)
    g = np.zeros(len(x))
    return float(_density_at(np.asarray(x, float), buf, choices, y, lengths, d2i, wloc, eps, tab, g, True)), g


# ---------------------------------------------------------------- nutpie: a cached C callback


@numba.njit(cache=True)
def _buffer_size(head):
    R, T, P, S, K = int(head[0]), int(head[1]), int(head[11]), int(head[12]), int(head[13])
    return _H + R + 2 * R * T + 2 * P * P + S * P + R * (T - 1) * P * K * 4


@numba.cfunc(LOGP_SIGNATURE, cache=True, error_model="numpy")
def _logp_cfunc(dim, x_, out_, logp_, user_data_):
    head = numba.carray(user_data_, (_H,), np.float64)
    if dim != int(head[4]):
        return -1
    buf = numba.carray(user_data_, (_buffer_size(head),), np.float64)
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    logp = numba.carray(logp_, (1,))
    choices, y, lengths, d2i, wloc, eps, tab = _unpack(buf)
    return finish(_density_at(x, buf, choices, y, lengths, d2i, wloc, eps, tab, out, True), out, logp)


@numba.cfunc(EXPAND_SIGNATURE, cache=True, error_model="numpy")
def _expand_cfunc(dim, expanded, x_, out_, user_data_):
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (expanded,))
    for i in range(dim):
        out[i] = x[i]  # draws are kept on the log scale; exponentiated when assembled
    return 0


def compile_nutpie(buf: np.ndarray, names: list[str], initial_point):
    """nutpie's compiled model of one family's conditional posterior (draws on the log scale)."""
    return compiled_nutpie_model(_logp_cfunc, _expand_cfunc, buf, names, [()] * len(names), initial_point)


class GridDensity(Density):
    """One family's density (:mod:`ibo_pymc.engine.density`): the fused kernel over its data buffer.

    ``table``: a GP family's tabulated posterior, a callable returning ``(table, lo, h)`` or None
    (:func:`~.surrogate.gp_table`). NUTS then samples the density with the interpolated posterior (about half
    the cost of a gradient on the 11 x 11 grid); everything else (the mode, Laplace screening, bridge sampling,
    the log-likelihood of the draws) uses the exact one, and :meth:`sampling_error` measures the difference at
    the draws.
    """

    def __init__(self, buf: np.ndarray, names, table=None):
        self.buf = buf
        self.names = tuple(names)
        self.table = table
        self._sampled = None  # the buffer of the last interpolated NUTS run, until its error is measured

    def value(self, z):
        return log_density(self.buf, z)

    def value_and_grad(self, x):
        return log_density_grad(self.buf, x)

    def sampling_buffer(self, exact: bool = False) -> np.ndarray:
        """The buffer NUTS samples with: with the table, unless ``exact`` or there is none."""
        got = None if exact or self.table is None else self.table()
        return self.buf if got is None else with_table(self.buf, *got)

    def nutpie_model(self, initial_point, *, exact: bool = False):
        buf = self.sampling_buffer(exact)
        # kept for sampling_error, which follows the run: the table's copy (up to GP_TABLE_MAX_BYTES) is made once
        self._sampled = None if buf is self.buf else buf
        return compile_nutpie(buf, list(self.names), initial_point)

    def sampling_error(self, points) -> float:
        """The largest absolute difference between the sampled and the exact log-density at up to
        :data:`ERROR_CHECKS` of ``points`` (n, dim), evenly spaced (0 with no table): the buffer of the last
        :meth:`nutpie_model` (released here), else built afresh."""
        buf, self._sampled = (self.sampling_buffer() if self._sampled is None else self._sampled), None
        if buf is self.buf:
            return 0.0
        points = np.asarray(points, float).reshape(-1, len(self.names))
        step = max(1, len(points) // ERROR_CHECKS)
        X = points[::step]
        return float(np.max(np.abs(log_density(buf, X) - log_density(self.buf, X)), initial=0.0))
