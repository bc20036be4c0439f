"""The hotspot likelihood's inner loop, per family: argmax lookup + wrapped-Cauchy mixture, with its gradient.

One compiled Numba loop over the rounds (cached on disk) returns each family's summed log-likelihood and its
analytic gradient with respect to (param, tau_neg, tau_pos, gamma, w); the inputs are those of
:class:`~ibo_pymc.tasks.hotspot.model.op.FamilyLogLik` (its module docstring). Two front ends call it: that
PyTensor Op (the PyMC path) and the compiled C callback for nutpie
(:mod:`~ibo_pymc.tasks.hotspot.model.compiled`). It lives apart from the Op so that the nutpie path never
imports PyTensor (1.2 s of a fit's start-up).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ibo_pymc.tasks.hotspot.kernel import (
    block_length,
    bracket,
    half_difference_sines,
    log_norm,
    scale_terms,
    sinh2_half,
)


def _knot(v, step, n):
    pos = v / step
    inside = 1.0
    if pos <= 0.0:
        pos, inside = 0.0, 0.0
    elif pos >= n - 1:
        pos, inside = float(n - 1), 0.0
    i = min(int(math.floor(pos)), n - 2)
    return i, pos - i, inside / step


_knot_nb = numba.njit(cache=True, fastmath=False)(_knot)

#: floating-point licences for the kernel: fused multiply-add, reassociated sums and
#: reciprocal multiplication; no assumptions about NaN or infinity
_FAST = {"contract", "reassoc", "arcp"}
_SQRT_HALF = math.sqrt(0.5)
# Taylor coefficients of sin and cos up to z^17 / z^18: for |z| <= pi/4 the
# truncation error is below 5e-17, i.e. exact in double precision.
_SIN_C = tuple((-1.0) ** j / math.factorial(2 * j + 1) for j in range(9))
_COS_C = tuple((-1.0) ** j / math.factorial(2 * j) for j in range(10))


@numba.njit(cache=True, inline="always", fastmath=_FAST, error_model="numpy")
def _half_sincos(t):
    """sin(t/2), cos(t/2) for t in [0, pi] by polynomials (a fraction of libm's cost).

    With y = t/2 = pi/4 + z, |z| <= pi/4: sin y = (sin z + cos z)/sqrt2 and
    cos y = (cos z - sin z)/sqrt2. theta* always lies in [0, pi] (a convex
    combination of table angles); t is clamped there, branch-free.
    """
    z = 0.5 * min(max(t, 0.0), math.pi) - 0.25 * math.pi
    z2 = z * z
    s = _SIN_C[8]
    for j in range(7, -1, -1):  # Horner, constant trip count: unrolled and vectorised
        s = s * z2 + _SIN_C[j]
    s *= z
    c = _COS_C[9]
    for j in range(8, -1, -1):
        c = c * z2 + _COS_C[j]
    return (s + c) * _SQRT_HALF, (c - s) * _SQRT_HALF


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
def _loglik_kernel(T, xh, n_neg, grid, tau_step, param, tau_neg, tau_pos, gamma, w):
    F, P, K, N = T.shape
    sx = xh[0]
    cx = xh[1]
    ll = np.zeros(F)
    grad = np.zeros((5, F))
    for k in range(F):
        ip, wp, dwp = _knot_nb(param[k] - grid[k, 0], grid[k, 1], P)
        g = gamma[k]
        # one log per block of rounds, not per round: each factor S lies in
        # [1 / (1 + sg), 1 / sg], so a block of L factors stays within exp(+-680)
        sg, const, block = scale_terms(g, N)
        wk = w[k]
        acc = 0.0
        d_par = 0.0
        d_sg = 0.0
        d_w = 0.0
        for h in range(2):
            lo, hi = (0, n_neg) if h == 0 else (n_neg, N)
            if K == 1:
                it, it1, wt, dwt = 0, 0, 0.0, 0.0
            else:
                it, wt, dwt = _knot_nb(tau_neg[k] if h == 0 else tau_pos[k], tau_step, K)
                it1 = it + 1
            d_tau = 0.0
            for b0 in range(lo, hi, block):
                prod = 1.0
                for i in range(b0, min(b0 + block, hi)):
                    a = T[k, ip, it, i]
                    b = T[k, ip, it1, i]
                    c = T[k, ip + 1, it, i]
                    d = T[k, ip + 1, it1, i]
                    lo_row = a + wt * (b - a)
                    hi_row = c + wt * (d - c)
                    ts = lo_row + wp * (hi_row - lo_row)
                    # half-angle sums from the data's precomputed sin/cos(x/2): two trig calls per round
                    st, ct = _half_sincos(ts)
                    sm_, sp_ = half_difference_sines(sx[i], cx[i], st, ct)  # sin((x -+ ts) / 2)
                    cm_ = cx[i] * ct + sx[i] * st  # cos((x - ts) / 2)
                    cp_ = cx[i] * ct - sx[i] * st  # cos((x + ts) / 2)
                    qa = sg + sm_ * sm_
                    qb = sg + sp_ * sp_
                    inv_ab = 1.0 / (qa * qb)
                    A = qb * inv_ab
                    B = qa * inv_ab
                    S = wk * A + (1.0 - wk) * B
                    prod *= S
                    inv = 1.0 / S
                    # d log S / d theta*: d sin^2(dm) = -sin(dm) cos(dm), d sin^2(dp) = sin(dp) cos(dp)
                    dts = (wk * A * A * sm_ * cm_ - (1.0 - wk) * B * B * sp_ * cp_) * inv
                    d_par += dts * (hi_row - lo_row)
                    d_tau += dts * ((1.0 - wp) * (b - a) + wp * (d - c))
                    d_sg -= (wk * A * A + (1.0 - wk) * B * B) * inv
                    d_w += (A - B) * inv
                acc += math.log(prod)
            grad[1 + h, k] = d_tau * dwt
        ll[k] = acc + const
        grad[0, k] = d_par * dwp
        grad[3, k] = N / math.tanh(g) + d_sg * 0.5 * math.sinh(g)
        grad[4, k] = d_w
    return ll, grad


def half_angles(theta2) -> np.ndarray:
    """The (2, N) data input of :class:`FamilyLogLik`: sin and cos of theta2 / 2."""
    x = np.asarray(theta2, float)
    return np.stack([np.sin(0.5 * x), np.cos(0.5 * x)])


@numba.njit(cache=True, inline="always")
def _draw_rows(T, p, p_step, tau, tau_step):
    """The knot weights of a draw's shape parameter ``p`` (relative to the table's first node; nodes ``p_step``
    apart) and ``tau``, and the four rows of the family's tables ``T`` (P, K, N) around them."""
    P, K, _ = T.shape
    ip, wp, _ = _knot_nb(p, p_step, P)
    if K == 1:
        it, it1, wt = 0, 0, 0.0
    else:
        it, wt, _ = _knot_nb(tau, tau_step, K)
        it1 = it + 1
    return wp, wt, (T[ip, it], T[ip, it1], T[ip + 1, it], T[ip + 1, it1])


@numba.njit(cache=True, inline="always", fastmath=_FAST, error_model="numpy")
def _round_bracket(rows, wp, wt, xh, i, sg, w):
    """Round ``i``'s density over ``sinh g / 4 pi`` (:func:`~ibo_pymc.tasks.hotspot.kernel.bracket`) at the
    theta* interpolated from a draw's four table ``rows``: sin and cos of theta* / 2 by :func:`_half_sincos`,
    the half-angle sums from the data's ``xh`` (:func:`half_angles`), no library trig call."""
    ta, tb, tc, td = rows
    ts = (1 - wp) * ((1 - wt) * ta[i] + wt * tb[i]) + wp * ((1 - wt) * tc[i] + wt * td[i])
    st, ct = _half_sincos(ts)
    sm, sp = half_difference_sines(xh[0, i], xh[1, i], st, ct)  # sin((x -+ ts) / 2)
    return bracket(sg, sm * sm, sp * sp, w)


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
def _pointwise_kernel(T, xh, n_neg, param_lo, param_step, tau_step, param, tau_neg, tau_pos, gamma, w):
    """Log-density of every round (columns) at every draw (rows) for one family's tables ``T`` (P, K, N).

    The lookup and density of the NumPy forms (:func:`~ibo_pymc.tasks.hotspot.model.lookup.lookup_numpy`,
    :func:`~ibo_pymc.tasks.hotspot.kernel.logpdf`) with the sampling kernel's arithmetic
    (:func:`_round_bracket`), so a round costs one logarithm; the forms agree to a few units in the last place
    (tested). Rounds before ``n_neg`` use ``tau_neg``, the rest ``tau_pos``.

    It and :func:`_summed_kernel` are two loops, not one with a flag: a branch on the flag inside the loop over
    the rounds kept the compiler from optimising either (one loop took 1.7x (pointwise) and 1.9x (summed) the time
    of these two, for the same values to the bit).
    """
    N = T.shape[2]
    out = np.empty((param.shape[0], N))
    for s in range(param.shape[0]):
        sg, const = sinh2_half(gamma[s]), log_norm(gamma[s])
        for lo, hi, tau in ((0, n_neg, tau_neg[s]), (n_neg, N, tau_pos[s])):
            wp, wt, rows = _draw_rows(T, param[s] - param_lo, param_step, tau, tau_step)
            for i in range(lo, hi):
                out[s, i] = const + math.log(_round_bracket(rows, wp, wt, xh, i, sg, w[s]))
    return out


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
def _summed_kernel(T, xh, n_neg, param_lo, param_step, tau_step, param, tau_neg, tau_pos, gamma, w):
    """:func:`_pointwise_kernel`'s log-densities summed over the rounds, one per draw (S,): the rounds' densities
    multiplied in blocks and one logarithm taken per block
    (:func:`~ibo_pymc.tasks.hotspot.kernel.block_length`)."""
    N = T.shape[2]
    out = np.empty(param.shape[0])
    for s in range(param.shape[0]):
        sg = sinh2_half(gamma[s])
        block = block_length(sg)
        acc = 0.0
        for lo, hi, tau in ((0, n_neg, tau_neg[s]), (n_neg, N, tau_pos[s])):
            wp, wt, rows = _draw_rows(T, param[s] - param_lo, param_step, tau, tau_step)
            for b0 in range(lo, hi, block):
                prod = 1.0
                for i in range(b0, min(b0 + block, hi)):
                    prod *= _round_bracket(rows, wp, wt, xh, i, sg, w[s])
                acc += math.log(prod)
        out[s] = acc + N * log_norm(gamma[s])
    return out


def pointwise_loglik(rt, family: str, x, n_neg: int, param, tau_neg, tau_pos, gamma, w, *, summed=False):
    """Pointwise log-likelihood (draws, rounds) of one family at flat arrays of draws, or with ``summed`` its
    sum over the rounds (draws,) (compiled; rounds in the internal order of ``rt``, the first ``n_neg`` at
    ``tau_neg``)."""
    k = rt.index(family)
    args = (np.ascontiguousarray(a, dtype=np.float64) for a in (param, tau_neg, tau_pos, gamma, w))
    kernel = _summed_kernel if summed else _pointwise_kernel
    return kernel(
        rt.values[k],
        half_angles(x),
        int(n_neg),
        float(rt.param_lo[k]),
        float(rt.param_step[k]),
        float(rt.tau_step),
        *args,
    )
