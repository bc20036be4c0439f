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


@numba.njit(cache=True, fastmath=_FAST, error_model="numpy")
def _pointwise_kernel(T, xh, n_neg, param_lo, param_step, tau_step, param, tau_neg, tau_pos, gamma, w, summed):
    """Log-density of every round (columns) at every draw (rows) for one family's tables ``T`` (P, K, N), or
    with ``summed`` its sum over the rounds (one column).

    The lookup and density of the NumPy forms (:func:`~ibo_pymc.tasks.hotspot.model.lookup.lookup_numpy`,
    :func:`~ibo_pymc.tasks.hotspot.kernel.logpdf`) with the sampling kernel's arithmetic: sin and cos of
    theta* / 2 by :func:`_half_sincos`, and the half-angle sums from the data's ``xh`` (:func:`half_angles`), so
    a round costs one logarithm and no library trig call, and a sum one logarithm per block of rounds
    (:func:`~ibo_pymc.tasks.hotspot.kernel.block_length`). The forms agree to a few units in the last place
    (tested). Rounds before ``n_neg`` use ``tau_neg``, the rest ``tau_pos``.
    """
    P, K, N = T.shape
    S = param.shape[0]
    out = np.empty((S, 1 if summed else N))
    for s in range(S):
        ip, wp, _ = _knot_nb(param[s] - param_lo, param_step, P)
        g = gamma[s]
        sg = sinh2_half(g)
        const = log_norm(g)
        block = block_length(sg) if summed else 1
        ws = w[s]
        acc = 0.0
        for h in range(2):
            lo, hi = (0, n_neg) if h == 0 else (n_neg, N)
            if K == 1:
                it, it1, wt = 0, 0, 0.0
            else:
                it, wt, _ = _knot_nb(tau_neg[s] if h == 0 else tau_pos[s], tau_step, K)
                it1 = it + 1
            for b0 in range(lo, hi, block):
                prod = 1.0
                for i in range(b0, min(b0 + block, hi)):
                    ts = (1 - wp) * ((1 - wt) * T[ip, it, i] + wt * T[ip, it1, i]) + wp * (
                        (1 - wt) * T[ip + 1, it, i] + wt * T[ip + 1, it1, i]
                    )
                    st, ct = _half_sincos(ts)
                    sm, sp = half_difference_sines(xh[0, i], xh[1, i], st, ct)  # sin((x -+ ts) / 2)
                    b = bracket(sg, sm * sm, sp * sp, ws)
                    if summed:
                        prod *= b
                    else:
                        out[s, i] = const + math.log(b)
                if summed:
                    acc += math.log(prod)
        if summed:
            out[s, 0] = acc + N * const
    return out


def pointwise_loglik(rt, family: str, x, n_neg: int, param, tau_neg, tau_pos, gamma, w, *, summed=False):
    """Pointwise log-likelihood (draws, rounds) of one family at flat arrays of draws, or with ``summed`` its
    sum over the rounds (draws,) (compiled; rounds in the internal order of ``rt``, the first ``n_neg`` at
    ``tau_neg``)."""
    k = rt.index(family)
    args = (np.ascontiguousarray(a, dtype=np.float64) for a in (param, tau_neg, tau_pos, gamma, w))
    out = _pointwise_kernel(
        rt.values[k],
        half_angles(x),
        int(n_neg),
        float(rt.param_lo[k]),
        float(rt.param_step[k]),
        float(rt.tau_step),
        *args,
        bool(summed),
    )
    return out[:, 0] if summed else out
