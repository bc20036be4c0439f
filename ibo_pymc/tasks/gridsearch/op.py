"""The grid task's PyTensor Op: one family's per-round log-likelihood with its analytic gradient, for PyMC.

:func:`ibo_pymc.tasks.gridsearch.model.build_model` writes a family's conditional posterior as a PyMC model on this
Op, the same density the fits sample with nutpie (:mod:`~ibo_pymc.tasks.gridsearch.density`, whose Numba kernel
``perform`` and PyTensor's Numba backend both call). It lives apart from that module so that a fit never imports
PyTensor (1.2 s of every process's start): only PyMC's own paths load this one.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ibo_pymc.tasks.gridsearch.choice import family_code, family_draws
from ibo_pymc.tasks.gridsearch.density import NO_TABLE, SURROGATE_CODE, _round_loglik, _weights
from ibo_pymc.tasks.gridsearch.options import GRID_8X8, OptionSet


class GridLogLik(Op):
    """Per-round log-likelihood ``ll (R,)`` of one family with its Jacobian ``(R, 3)`` in (theta, beta, tau), over
    the ``options`` (default the 8 x 8 grid); ``lengths`` (R,), the observations per round, default all T."""

    __props__ = ("surrogate", "family", "options")

    def __init__(self, surrogate: str, family: str, options: OptionSet = GRID_8X8):
        self.surrogate = surrogate
        self.family = family
        self.options = options
        self._codes = (SURROGATE_CODE[surrogate], family_code(family))
        self._weights = _weights(family, options)
        self._draws = family_draws(family, options.size)

    def make_node(self, choices, y, theta, beta, tau, lengths=None):
        choices = pt.as_tensor_variable(choices, dtype="int64")
        y = pt.as_tensor_variable(y, dtype="float64")
        params = [pt.as_tensor_variable(v, dtype="float64") for v in (theta, beta, tau)]
        if choices.ndim != 2 or y.ndim != 2 or any(p.ndim != 0 for p in params):
            raise ValueError("GridLogLik: choices and y are (rounds, trials), theta, beta, tau scalars")
        if lengths is None:
            lengths = pt.full((choices.shape[0],), choices.shape[1], dtype="int64")
        lengths = pt.as_tensor_variable(lengths, dtype="int64")
        return Apply(self, [choices, y, *params, lengths], [pt.dvector(), pt.dmatrix()])

    def perform(self, node, inputs, outputs):
        choices, y, theta, beta, tau, lengths = inputs
        ll, g = _round_loglik(
            choices,
            y,
            np.ascontiguousarray(lengths),
            self.options.sqdist,
            self._weights,
            self._draws,
            self._codes[0],
            self._codes[1],
            float(theta),
            float(beta),
            float(tau),
            True,
            NO_TABLE,
            0.0,
            0.0,
        )
        outputs[0][0] = ll
        outputs[1][0] = g

    def infer_shape(self, fgraph, node, shapes):
        R = shapes[0][0]
        return [(R,), (R, 3)]

    def grad(self, inputs, output_grads):
        g_ll = output_grads[0]
        _, jac = self(*inputs)
        data = [grad_not_implemented(self, j, inputs[j], "the data are not differentiable") for j in (0, 1)]
        return [*data, *(pt.dot(g_ll, jac[:, j]) for j in range(3)), grad_not_implemented(self, 5, inputs[5])]


try:  # the Numba backend calls the same kernel
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    @register_funcify_default_op_cache_key(GridLogLik)
    def _numba_grid_loglik(op, node=None, **kwargs):
        s_code, f_code = op._codes
        d2i, wloc, eps, no_table = op.options.sqdist, op._weights, op._draws, NO_TABLE

        @numba.njit
        def grid_loglik_numba(choices, y, theta, beta, tau, lengths):
            return _round_loglik(
                choices,
                y,
                lengths,
                d2i,
                wloc,
                eps,
                s_code,
                f_code,
                theta.item(),
                beta.item(),
                tau.item(),
                True,
                no_table,
                0.0,
                0.0,
            )

        return grid_loglik_numba
except ImportError:  # pragma: no cover
    pass
