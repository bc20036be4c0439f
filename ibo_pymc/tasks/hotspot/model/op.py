"""One fused PyTensor Op: argmax lookup + wrapped-Cauchy mixture, per family.

The model's likelihood is, for each family k, the sum over rounds of
``log p(theta2_i | theta*_k(param_k, tau_k(i), delta_r1_i), gamma_k, w_k)``
(docs: explanation/model; the lookup of :mod:`ibo_pymc.tasks.hotspot.model.lookup`, the density
of :mod:`ibo_pymc.tasks.hotspot.model.likelihood`). Written as a graph of PyTensor ops it is a
few dozen small nodes, and calling them one by one costs ~250 us per gradient
on subject 28 (294 rounds x 3 families). This Op does the same arithmetic in
one compiled loop over the rounds, returning the per-family log-likelihood and
its analytic gradient with respect to the five per-family inputs; the
gradient costs a few microseconds. The loop is a Numba kernel (cached on
disk), used by the C/Python backend through ``perform`` and by the Numba
backend (nutpie) directly.

Inputs (``F`` families, ``P`` parameter nodes, ``K`` tau nodes, ``N`` rounds,
rounds sorted so the ``n_neg`` rounds with delta_r1 < 0 come first):

* ``T`` (F, P, K, N): theta* at each round for every node (constant);
* ``xh`` (2, N): sin and cos of half the observed theta2 (:func:`half_angles`);
  ``n_neg`` (): number of leading rounds with delta_r1 < 0;
* ``grid`` (F, 2): parameter grid start and step; ``tau_step`` ();
* ``param``, ``tau_neg``, ``tau_pos``, ``gamma``, ``w``: (F,) each.

Outputs: ``loglik`` (F,) and ``grad`` (5, F), the gradient of ``loglik[k]``
with respect to (param, tau_neg, tau_pos, gamma, w)[k].
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ibo_pymc.tasks.hotspot.kernel import half_difference_sines, scale_terms


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


class FamilyLogLik(Op):
    """Per-family summed log-likelihood with an analytic gradient (see the module docstring)."""

    __props__ = ()

    def make_node(self, T, xh, n_neg, grid, tau_step, param, tau_neg, tau_pos, gamma, w):
        T = pt.as_tensor_variable(T, dtype="float64")
        x = pt.as_tensor_variable(xh, dtype="float64")
        n_neg = pt.as_tensor_variable(n_neg, dtype="int64")
        grid = pt.as_tensor_variable(grid, dtype="float64")
        tau_step = pt.as_tensor_variable(tau_step, dtype="float64")
        vec = [pt.as_tensor_variable(v, dtype="float64") for v in (param, tau_neg, tau_pos, gamma, w)]
        if T.ndim != 4 or x.ndim != 2 or grid.ndim != 2 or any(v.ndim != 1 for v in vec):
            raise ValueError("FamilyLogLik: T is (F, P, K, N), xh (2, N), grid (F, 2), parameters (F,)")
        inputs = [T, x, n_neg, grid, tau_step, *vec]
        return Apply(self, inputs, [pt.dvector(), pt.dmatrix()])

    def perform(self, node, inputs, outputs):
        T, xh, n_neg, grid, tau_step, *rest = inputs
        ll, grad = _loglik_kernel(T, xh, int(n_neg), grid, float(tau_step), *rest)
        outputs[0][0] = ll
        outputs[1][0] = grad

    def infer_shape(self, fgraph, node, shapes):
        F = shapes[0][0]
        return [(F,), (5, F)]

    def grad(self, inputs, output_grads):
        g_ll = output_grads[0]
        _, grad = self(*inputs)
        out = [grad_not_implemented(self, j, inputs[j], "data and tables are not differentiable") for j in range(5)]
        return out + [g_ll * grad[j] for j in range(5)]


family_loglik = FamilyLogLik()


try:  # let the Numba backend (nutpie) call the same kernel
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    @register_funcify_default_op_cache_key(FamilyLogLik)
    def _numba_family_loglik(op, node=None, **kwargs):
        kernel = _loglik_kernel

        @numba.njit
        def family_loglik_numba(T, xh, n_neg, grid, tau_step, param, tau_neg, tau_pos, gamma, w):
            return kernel(T, xh, n_neg.item(), grid, tau_step.item(), param, tau_neg, tau_pos, gamma, w)

        return family_loglik_numba
except ImportError:  # pragma: no cover - older PyTensor
    pass
