"""One family's conditional log-density on the unconstrained scale, and the two adapters every sampler goes through.

The engine samples each family's conditional posterior ``p(params | y, family)`` on an unconstrained scale
(log for a positive parameter, logit for a bounded one), where the density is the log-likelihood plus the
log prior with its Jacobian. A task hands the engine one :class:`Density` per family; the engine needs

* :meth:`Density.value` at many points at once (bridge sampling of the family's evidence),
* :meth:`Density.value_and_grad` at one point (the mode and the Laplace evidence that screen families),
* :meth:`Density.nutpie_model`, nutpie's compiled model (of the density, or of a cheaper approximation whose
  distance from it :meth:`Density.sampling_error` measures at the draws), and :meth:`Density.pymc_model`, the
  PyMC model that ``pm.sample`` runs.

Two adapters make the last two from what a task has:

* a compiled C callback (a Numba ``cfunc`` of the density, as both real tasks have) becomes nutpie's model
  through :func:`compiled_nutpie_model`, with :func:`finish` as the callbacks' shared last step;
* any density with a value and a gradient in Python becomes a PyTensor Op (:class:`DensityOp`), hence the
  PyMC model of :meth:`Density.pymc_model` (a flat vector ``z`` plus the density as a potential), and, with
  no compiled callback, nutpie's model from a Python callback (:func:`pyfunc_nutpie_model`).

:class:`PyTensorDensity` builds all of it from a task's log-likelihood written as a PyTensor expression: the
shortest way to bring one's own task (see the toy bandit task in the tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numba
import numpy as np

#: the C signatures nutpie calls: ``logp(dim, x, grad_out, logp_out, user_data)`` and
#: ``expand(dim, n_expanded, x, out, user_data)``; a nonzero return is an error code
LOGP_SIGNATURE = numba.types.int64(
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.voidptr,
)
EXPAND_SIGNATURE = numba.types.int64(
    numba.types.uint64,
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.voidptr,
)


@numba.njit(cache=True)
def finish(val, grad, logp):
    """The last step of every log-density callback: store the value, then the error code nutpie expects
    (0 fine, 4 a non-finite value, 3 a non-finite gradient: the sampler rejects the point)."""
    logp[0] = val
    if not np.isfinite(val):
        return 4
    for i in range(grad.shape[0]):
        if not np.isfinite(grad[i]):
            return 3
    return 0


def compiled_nutpie_model(
    logp_cfunc,
    expand_cfunc,
    user_data: np.ndarray,
    names: Sequence[str],
    shapes: Sequence[tuple],
    initial_point: Callable,
    *,
    dims: dict | None = None,
    coords: dict | None = None,
):
    """nutpie's compiled model of a density given as C callbacks over a data buffer ``user_data``.

    ``names`` and ``shapes`` lay out the expanded draws (each name takes ``prod(shape)`` coordinates, in
    order); ``initial_point(seed)`` gives a chain's unconstrained start.
    """
    from nutpie.compile_pymc import CompiledPyMCModel

    sizes = [int(np.prod(s)) for s in shapes]
    n_dim = sum(sizes)
    starts = np.cumsum([0, *sizes])
    slices = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
    return CompiledPyMCModel(
        _n_dim=n_dim,
        dims=dict(dims or {}),
        _coords=dict(coords or {}),
        _shapes=dict(zip(names, shapes)),
        compiled_logp_func=logp_cfunc,
        compiled_expand_func=expand_cfunc,
        initial_point_func=initial_point,
        shared_data={},
        user_data=user_data,
        n_expanded=n_dim,
        shape_info=(list(names), slices, list(shapes)),
        logp_func=None,
        expand_func=None,
    )


def pyfunc_nutpie_model(density: Density, initial_point: Callable):
    """nutpie's model of a density known only through :meth:`Density.value_and_grad` (a Python callback per
    gradient: slower than a compiled one, and enough for small tasks)."""
    from nutpie.compiled_pyfunc import from_pyfunc

    names = list(density.names)

    def make_logp(**_):
        def logp(x, **__):
            # a point where the density fails arithmetically (a kernel dividing by a tau that underflowed) is
            # rejected, as a compiled callback's error code is, instead of aborting every chain
            try:
                v, g = density.value_and_grad(x)
            except ArithmeticError:
                return -np.inf, np.zeros(len(names))
            return (v, g) if np.isfinite(v) and np.isfinite(g).all() else (-np.inf, np.zeros_like(g))

        return logp

    def make_expand(*_, **__):
        def expand(x, **___):
            return {n: np.asarray(x[i]) for i, n in enumerate(names)}

        return expand

    return from_pyfunc(
        len(names),
        make_logp,
        make_expand,
        [np.dtype("float64")] * len(names),
        [()] * len(names),
        names,
        make_initial_point_fn=initial_point,
    )


class Density:
    """One family's conditional log-density on the unconstrained scale (module docstring).

    A subclass gives :attr:`names` (one per coordinate, the parameters' names) and :meth:`value_and_grad`;
    the defaults of the rest are built on it. A compiled density overrides :meth:`value` (vectorised) and
    :meth:`nutpie_model` (its C callback).
    """

    names: tuple[str, ...] = ()

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError

    def value(self, z: np.ndarray) -> np.ndarray:
        """The density at many points ``z`` (n, dim)."""
        return np.array([self.value_and_grad(row)[0] for row in np.atleast_2d(z)])

    def nutpie_model(self, initial_point: Callable, *, exact: bool = False):
        """nutpie's model of the density. A density may give NUTS a cheaper approximation of itself (the grid
        task's interpolated GP posterior); ``exact`` asks for the density itself, and :meth:`sampling_error`
        says how far the approximation is from it at the draws."""
        return pyfunc_nutpie_model(self, initial_point)

    def sampling_error(self, points: np.ndarray) -> float:
        """The largest absolute difference between the log-density NUTS samples (:meth:`nutpie_model`) and this one at
        ``points`` (n, dim): 0 for a density sampled as it is."""
        return 0.0

    def pymc_model(self):
        """A PyMC model whose free variable ``z`` (the unconstrained vector, flat prior) carries the density."""
        import pymc as pm

        with pm.Model() as m:
            z = pm.Flat("z", shape=len(self.names))
            pm.Potential("log_density", DensityOp(self)(z)[0])
        return m


def _density_op_class():
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class _DensityOp(Op):
        """A :class:`Density` as a PyTensor Op with two outputs, the value and its gradient (one call of
        :meth:`Density.value_and_grad`); the gradient of the value is the second output."""

        __props__ = ("density",)

        def __init__(self, density):
            self.density = density

        def make_node(self, z):
            z = pt.as_tensor_variable(z, dtype="float64")
            return Apply(self, [z], [pt.dscalar(), pt.dvector()])

        def perform(self, node, inputs, outputs):
            v, g = self.density.value_and_grad(np.asarray(inputs[0], float))
            outputs[0][0] = np.asarray(v, dtype=float)
            outputs[1][0] = np.asarray(g, dtype=float)

        def grad(self, inputs, output_grads):
            _, g = self(inputs[0])
            return [output_grads[0] * g]

    return _DensityOp


_OP = None


def DensityOp(density: Density):  # noqa: N802 - used as a class
    """The PyTensor Op of ``density``: outputs (value, gradient); PyTensor is imported on first use, so that a fit
    that never builds a PyMC model never pays for it."""
    global _OP
    if _OP is None:
        _OP = _density_op_class()
    return _OP(density)


class PyTensorDensity(Density):
    """A family's density from a log-likelihood written in PyTensor.

    ``loglik(params) -> pointwise log-likelihood`` takes a dict of scalar PyTensor variables (the
    parameters on their natural scale) and returns a vector (one entry per observation unit, e.g. per
    round). ``priors`` are the family's parameters' priors (:mod:`ibo_pymc.engine.priors`), in the
    unconstrained vector's order. The value and gradient, and the pointwise log-likelihood, are compiled once.
    """

    def __init__(self, loglik: Callable, priors: dict):
        import pytensor
        import pytensor.tensor as pt

        self.names = tuple(priors)
        z = pt.dvector("z")
        params = {n: p.from_unconstrained_tensor(z[i]) for i, (n, p) in enumerate(priors.items())}
        pointwise = loglik(params)
        total = pointwise.sum() + sum(p.log_density_unconstrained_tensor(z[i]) for i, p in enumerate(priors.values()))
        self._value_grad = pytensor.function([z], [total, pytensor.grad(total, z)])
        self._pointwise = pytensor.function([z], pointwise)
        self._priors = priors

    def value_and_grad(self, x):
        v, g = self._value_grad(np.asarray(x, float))
        return float(v), np.asarray(g, float)

    def pointwise(self, params: dict) -> np.ndarray:
        """The pointwise log-likelihood (n, units) at n points given on the natural scale."""
        cols = [np.asarray(params[n], float).ravel() for n in self.names]
        z = np.stack([p.to_unconstrained(c) for p, c in zip(self._priors.values(), cols)], axis=-1)
        return np.stack([self._pointwise(row) for row in z])
