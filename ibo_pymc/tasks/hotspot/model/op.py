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
disk; :mod:`~ibo_pymc.tasks.hotspot.model.round_loglik`), used by the C/Python backend through
``perform`` and by the Numba backend directly.

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

import numba
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ibo_pymc.tasks.hotspot.model.round_loglik import _loglik_kernel, half_angles

__all__ = ["FamilyLogLik", "family_loglik", "half_angles"]


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
