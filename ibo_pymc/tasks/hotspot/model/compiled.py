"""The model's log-density as one cached Numba C callback, for nutpie.

nutpie samples a PyMC model by compiling its whole PyTensor graph with Numba,
which costs 10-20 s in every new process (measured here: 16 s cold, 12 s
warm for the subject-28 ũ± model). The density of this package is small and
fixed, so it is also written out directly: :func:`_logp_cfunc` maps the
unconstrained point to the parameters (the same logit interval transforms
PyMC uses), calls the likelihood kernel of :mod:`ibo_pymc.tasks.hotspot.model.op`, and
returns the log-density and gradient. It is compiled once per machine
(``cache=True``) and takes all data through nutpie's user-data pointer, so
one compiled function serves every subject, model and layout.

:func:`compile_model` wraps it into nutpie's ``CompiledPyMCModel``.
``tests/test_model.py`` checks that its log-density and gradient equal the
PyMC model's (``build_model``) at random points, so both samplers target the
same posterior.

Buffer layout (float64): a header (``_H`` values), then a descriptor of each
unconstrained coordinate (code, component, prior low, prior high), then T (F, P, K, N)
with one slice per component, the (2, N) half angles and the (F, 2) parameter
grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from ibo_pymc.engine.density import (
    EXPAND_SIGNATURE,
    LOGP_SIGNATURE,
    compiled_nutpie_model,
    finish,
)
from ibo_pymc.tasks.hotspot.forward.priors import PRIORS
from ibo_pymc.tasks.hotspot.forward.variants import tau_names
from ibo_pymc.tasks.hotspot.model.builder import SubjectData, whole_families
from ibo_pymc.tasks.hotspot.model.round_loglik import _loglik_kernel

_H = 9  # header: F, P, K, N, n_neg, (unused), layout (0 marginal, 1 stacked), tau_step, n_dim
_D = 4  # per unconstrained coordinate: code, component (-1: all), prior low, prior high
# block codes
PARAM, GAMMA, W, TAU_NEG, TAU_POS, TAU_BOTH = range(6)


@dataclass(frozen=True)
class Block:
    name: str
    code: int
    component: int  # component index for PARAM blocks, -1 otherwise
    size: int  # 1 (scalar) or F (one per component, stacked layout)
    lo: tuple  # uniform prior interval of each of the block's values
    hi: tuple


def blocks_for(model: str, components, layout: str) -> list[Block]:
    """Parameter blocks of a model; ``components`` as in :func:`~ibo_pymc.tasks.hotspot.model.builder.build_model`."""
    out = []
    for k, c in enumerate(components):
        lo, hi = c.bounds("param")
        out.append(Block(c.var_name, PARAM, k, 1, (lo,), (hi,)))
    code = {"gamma": GAMMA, "w": W, "tau": TAU_BOTH, "tau_neg": TAU_NEG, "tau_pos": TAU_POS}
    for n in ("gamma", "w", *tau_names(model)):
        if layout == "stacked":
            lo, hi = zip(*(c.bounds(n) for c in components))
            out.append(Block(n, code[n], -1, len(components), lo, hi))
        else:
            lo, hi = PRIORS[n].bounds
            out.append(Block(n, code[n], -1, 1, (lo,), (hi,)))
    return out


def pack(sd: SubjectData, layout: str, components=None) -> tuple[np.ndarray, list[Block]]:
    """The float64 user-data buffer of a subject's model, and its parameter blocks."""
    components = tuple(components or whole_families(sd.families))
    if layout != "stacked" and (
        [c.family for c in components] != list(sd.families) or any(c.n_strata > 1 for c in components)
    ):
        raise ValueError("the marginal layout takes one whole component per family")
    T, xh, n_neg, grid, tau_step = sd.op_inputs([c.family for c in components])
    F, P, K, N = T.shape
    blocks = blocks_for(sd.model, components, layout)
    n_dim = sum(b.size for b in blocks)
    header = [F, P, K, N, n_neg, 0.0, 1.0 if layout == "stacked" else 0.0, tau_step, n_dim]
    desc = []
    for b in blocks:
        for s in range(b.size):
            target = b.component if b.code == PARAM else (s if b.size > 1 else -1)
            desc += [b.code, target, b.lo[s], b.hi[s]]
    buf = np.concatenate([np.asarray(header, float), np.asarray(desc, float), T.ravel(), xh.ravel(), grid.ravel()])
    return np.ascontiguousarray(buf), blocks


@numba.njit(cache=True, inline="always")
def _buffer_size(head):
    F, P, K, N, n_dim = int(head[0]), int(head[1]), int(head[2]), int(head[3]), int(head[8])
    return _H + _D * n_dim + F * P * K * N + 2 * N + 2 * F


@numba.njit(cache=True, inline="always")
def _data(buf):
    """Views of the tables T (F, P, K, N), half angles (2, N) and parameter grid (F, 2)."""
    F, P, K, N, n_dim = int(buf[0]), int(buf[1]), int(buf[2]), int(buf[3]), int(buf[8])
    off = _H + _D * n_dim
    T = buf[off : off + F * P * K * N].reshape((F, P, K, N))
    off += F * P * K * N
    xh = buf[off : off + 2 * N].reshape((2, N))
    off += 2 * N
    return T, xh, buf[off : off + 2 * F].reshape((F, 2))


@numba.njit(cache=True, inline="always")
def _coordinate(buf, j, F):
    """Descriptor of unconstrained coordinate j: code, the components it sets [k0, k1), prior interval."""
    o = _H + _D * j
    target = int(buf[o + 1])
    k0, k1 = (0, F) if target < 0 else (target, target + 1)
    return int(buf[o]), k0, k1, buf[o + 2], buf[o + 3]


@numba.njit(cache=True, error_model="numpy")
def _density(x, buf, grad_out):
    """Log-density at unconstrained ``x``; writes d/dx into ``grad_out``."""
    F = int(buf[0])
    n_neg, stacked, tau_step, n_dim = int(buf[4]), buf[6] > 0.5, buf[7], int(buf[8])
    T, xh, grid = _data(buf)
    param = np.zeros(F)
    gamma = np.zeros(F)
    w = np.zeros(F)
    tn = np.zeros(F)
    tp = np.zeros(F)
    dvalue = np.zeros(n_dim)  # d parameter / d x
    lp = 0.0
    for j in range(n_dim):
        code, k0, k1, lo, hi = _coordinate(buf, j, F)
        z = x[j]
        # logit interval transform; uniform prior x Jacobian = sigmoid(z) sigmoid(-z)
        if z >= 0:
            e = math.exp(-z)
            sig = 1.0 / (1.0 + e)
            lp += -math.log1p(e) - z - math.log1p(e)
        else:
            e = math.exp(z)
            sig = e / (1.0 + e)
            lp += z - 2.0 * math.log1p(e)
        grad_out[j] = 1.0 - 2.0 * sig
        v = lo + (hi - lo) * sig
        dvalue[j] = (hi - lo) * sig * (1.0 - sig)
        for k in range(k0, k1):
            if code == PARAM:
                param[k] = v
            elif code == GAMMA:
                gamma[k] = v
            elif code == W:
                w[k] = v
            elif code == TAU_NEG:
                tn[k] = v
            elif code == TAU_POS:
                tp[k] = v
            else:
                tn[k] = v
                tp[k] = v
    ll, g = _loglik_kernel(T, xh, n_neg, grid, tau_step, param, tn, tp, gamma, w)
    # weight of each component's log-likelihood in the total
    wt = np.ones(F)
    if stacked:
        total = ll.sum()
    else:
        m = ll.max()
        acc = 0.0
        for k in range(F):
            wt[k] = math.exp(ll[k] - m)
            acc += wt[k]
        total = m + math.log(acc) - math.log(F)
        wt /= acc
    for j in range(n_dim):
        code, k0, k1, _lo, _hi = _coordinate(buf, j, F)
        d = 0.0
        for k in range(k0, k1):
            if code == PARAM:
                d += wt[k] * g[0, k]
            elif code == TAU_BOTH:
                d += wt[k] * (g[1, k] + g[2, k])
            elif code == TAU_NEG:
                d += wt[k] * g[1, k]
            elif code == TAU_POS:
                d += wt[k] * g[2, k]
            elif code == GAMMA:
                d += wt[k] * g[3, k]
            else:
                d += wt[k] * g[4, k]
        grad_out[j] += d * dvalue[j]
    return lp + total


@numba.njit(cache=True, error_model="numpy")
def _constrain(x, buf, out):
    F, n_dim = int(buf[0]), int(buf[8])
    for j in range(n_dim):
        _code, _k0, _k1, lo, hi = _coordinate(buf, j, F)
        out[j] = lo + (hi - lo) / (1.0 + math.exp(-x[j]))


@numba.cfunc(LOGP_SIGNATURE, cache=True, error_model="numpy")
def _logp_cfunc(dim, x_, out_, logp_, user_data_):
    head = numba.carray(user_data_, (_H,), np.float64)
    if dim != int(head[8]):
        return -1
    buf = numba.carray(user_data_, (_buffer_size(head),), np.float64)
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    logp = numba.carray(logp_, (1,))
    return finish(_density(x, buf, out), out, logp)


@numba.cfunc(EXPAND_SIGNATURE, cache=True, error_model="numpy")
def _expand_cfunc(dim, expanded, x_, out_, user_data_):
    head = numba.carray(user_data_, (_H,), np.float64)
    if dim != int(head[8]) or expanded != dim:
        return -1
    buf = numba.carray(user_data_, (_buffer_size(head),), np.float64)
    _constrain(numba.carray(x_, (dim,)), buf, numba.carray(out_, (dim,)))
    return 0


def density(sd: SubjectData, layout: str, x, components=None) -> tuple[float, np.ndarray]:
    """Log-density and gradient at an unconstrained point (for tests and benchmarks)."""
    buf, _ = pack(sd, layout, components)
    g = np.zeros(len(x))
    return float(_density(np.asarray(x, float), buf, g)), g


def compile_model(sd: SubjectData, layout: str = "stacked", components=None):
    """nutpie's compiled-model object for a subject, from the cached C callbacks (the engine's adapter,
    :func:`ibo_pymc.engine.density.compiled_nutpie_model`)."""
    import pandas as pd

    components = tuple(components or whole_families(sd.families))
    buf, blocks = pack(sd, layout, components)
    names, shapes, dims = [], [], {}
    for b in blocks:
        names.append(b.name)
        # shape parameters are scalars; shared parameters get a component dim in the stacked layout
        shapes.append(() if b.code == PARAM or layout != "stacked" else (b.size,))
        if shapes[-1]:
            dims[b.name] = ("component",)
    n_dim = sum(b.size for b in blocks)
    if sum(int(np.prod(s)) for s in shapes) != n_dim:  # every block is a scalar or a vector of its size
        raise RuntimeError(f"blocks of {n_dim} coordinates laid out as shapes {shapes}")

    def initial_point(seed):
        rng = np.random.default_rng(seed)
        return rng.uniform(-2.0, 2.0, size=n_dim)

    return compiled_nutpie_model(
        _logp_cfunc,
        _expand_cfunc,
        buf,
        names,
        shapes,
        initial_point,
        dims=dims,
        coords={"component": pd.Index([c.label for c in components])},
    )
