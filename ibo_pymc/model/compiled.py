"""The model's log-density as one cached Numba C callback, for nutpie.

nutpie samples a PyMC model by compiling its whole PyTensor graph with Numba,
which costs 10-20 s in every new process (measured here: 16 s cold, 12 s
warm for the subject-28 ũ± model). The density of this package is small and
fixed, so it is also written out directly: :func:`_logp_cfunc` maps the
unconstrained point to the parameters (the same logit interval transforms
PyMC uses), calls the likelihood kernel of :mod:`ibo_pymc.model.op`, and
returns the log-density and gradient. It is compiled once per machine
(``cache=True``) and takes all data through nutpie's user-data pointer, so
one compiled function serves every subject, model and layout.

:func:`compile_model` wraps it into nutpie's ``CompiledPyMCModel``.
``tests/test_model.py`` checks that its log-density and gradient equal the
PyMC model's (``build_model``) at random points, so both samplers target the
same posterior.

Buffer layout (float64): a header (``_H`` values), then block descriptors
(code, family, size per block), then T (F, P, K, N), the (2, N) half angles
and the (F, 2) parameter grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from ibo_pymc.model.builder import (
    GAMMA_BOUNDS,
    TAU_BOUNDS,
    W_BOUNDS,
    SubjectData,
    tau_names,
)
from ibo_pymc.model.op import _loglik_kernel

_H = 9  # header: F, P, K, N, n_neg, n_blocks, layout (0 marginal, 1 stacked), tau_step, n_dim
# block codes
PARAM, GAMMA, W, TAU_NEG, TAU_POS, TAU_BOTH = range(6)


@dataclass(frozen=True)
class Block:
    name: str
    code: int
    family: int  # family index for PARAM blocks, -1 otherwise
    size: int  # 1 (scalar) or F (one per family, stacked layout)


def blocks_for(model: str, families, layout: str) -> list[Block]:
    from ibo_pymc.forward.acquisition import get_family

    F = len(families)
    out = [Block(get_family(f).var_name, PARAM, k, 1) for k, f in enumerate(families)]
    size = F if layout == "stacked" else 1
    out += [Block("gamma", GAMMA, -1, size), Block("w", W, -1, size)]
    code = {"tau": TAU_BOTH, "tau_neg": TAU_NEG, "tau_pos": TAU_POS}
    out += [Block(n, code[n], -1, size) for n in tau_names(model)]
    return out


def pack(sd: SubjectData, layout: str) -> tuple[np.ndarray, list[Block]]:
    """The float64 user-data buffer of a subject's model, and its parameter blocks."""
    T, xh, n_neg, grid, tau_step = sd.op_inputs()
    F, P, K, N = T.shape
    blocks = blocks_for(sd.model, sd.families, layout)
    n_dim = sum(b.size for b in blocks)
    header = [F, P, K, N, n_neg, len(blocks), 1.0 if layout == "stacked" else 0.0, tau_step, n_dim]
    desc = [v for b in blocks for v in (b.code, b.family, b.size)]
    buf = np.concatenate([np.asarray(header, float), np.asarray(desc, float), T.ravel(), xh.ravel(), grid.ravel()])
    return np.ascontiguousarray(buf), blocks


@numba.njit(cache=True, inline="always")
def _bounds(code, start, step, P):
    """Prior interval of a block: the family's parameter grid, or the shared bounds."""
    if code == PARAM:
        return start, start + step * (P - 1)
    if code == GAMMA:
        return GAMMA_BOUNDS
    if code == W:
        return W_BOUNDS
    return TAU_BOUNDS


@numba.njit(cache=True, inline="always")
def _buffer_size(head):
    F, P, K, N, nb = int(head[0]), int(head[1]), int(head[2]), int(head[3]), int(head[5])
    return _H + 3 * nb + F * P * K * N + 2 * N + 2 * F


@numba.njit(cache=True, inline="always")
def _data(buf):
    """Views of the tables T (F, P, K, N), half angles (2, N) and parameter grid (F, 2)."""
    F, P, K, N, nb = int(buf[0]), int(buf[1]), int(buf[2]), int(buf[3]), int(buf[5])
    off = _H + 3 * nb
    T = buf[off : off + F * P * K * N].reshape((F, P, K, N))
    off += F * P * K * N
    xh = buf[off : off + 2 * N].reshape((2, N))
    off += 2 * N
    return T, xh, buf[off : off + 2 * F].reshape((F, 2))


@numba.njit(cache=True, inline="always")
def _block(buf, b):
    """Descriptor (code, family index, size) of parameter block b."""
    return int(buf[_H + 3 * b]), int(buf[_H + 3 * b + 1]), int(buf[_H + 3 * b + 2])


@numba.njit(cache=True, inline="always")
def _targets(size, s, F):
    """Families a block's s-th value applies to: all (shared scalar) or family s (stacked)."""
    return (0, F) if size == 1 else (s, s + 1)


@numba.njit(cache=True, error_model="numpy")
def _density(x, buf, grad_out):
    """Log-density at unconstrained ``x``; writes d/dx into ``grad_out``."""
    F, P = int(buf[0]), int(buf[1])
    n_neg, nb, stacked, tau_step = int(buf[4]), int(buf[5]), buf[6] > 0.5, buf[7]
    T, xh, grid = _data(buf)
    param = np.zeros(F)
    gamma = np.zeros(F)
    w = np.zeros(F)
    tn = np.zeros(F)
    tp = np.zeros(F)
    dvalue = np.zeros(x.shape[0])  # d parameter / d x
    lp = 0.0
    j = 0
    for b in range(nb):
        code, fam, size = _block(buf, b)
        for s in range(size):
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
            lo, hi = _bounds(code, grid[fam, 0] if code == PARAM else 0.0, grid[fam, 1] if code == PARAM else 0.0, P)
            v = lo + (hi - lo) * sig
            dvalue[j] = (hi - lo) * sig * (1.0 - sig)
            if code == PARAM:
                param[fam] = v
            else:
                k0, k1 = _targets(size, s, F)
                for k in range(k0, k1):
                    if code == GAMMA:
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
            j += 1
    ll, g = _loglik_kernel(T, xh, n_neg, grid, tau_step, param, tn, tp, gamma, w)
    # weight of each family's log-likelihood in the total
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
    j = 0
    for b in range(nb):
        code, fam, size = _block(buf, b)
        for s in range(size):
            d = 0.0
            if code == PARAM:
                d = wt[fam] * g[0, fam]
            else:
                k0, k1 = _targets(size, s, F)
                for k in range(k0, k1):
                    if code == TAU_BOTH:
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
            j += 1
    return lp + total


@numba.njit(cache=True, error_model="numpy")
def _constrain(x, buf, out):
    P, nb = int(buf[1]), int(buf[5])
    grid = _data(buf)[2]
    j = 0
    for b in range(nb):
        code, fam, size = _block(buf, b)
        for _s in range(size):
            start, step = (grid[fam, 0], grid[fam, 1]) if code == PARAM else (0.0, 0.0)
            lo, hi = _bounds(code, start, step, P)
            out[j] = lo + (hi - lo) / (1.0 + math.exp(-x[j]))
            j += 1


_LOGP_SIG = numba.types.int64(
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.voidptr,
)
_EXPAND_SIG = numba.types.int64(
    numba.types.uint64,
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.voidptr,
)


@numba.cfunc(_LOGP_SIG, cache=True, error_model="numpy")
def _logp_cfunc(dim, x_, out_, logp_, user_data_):
    head = numba.carray(user_data_, (_H,), np.float64)
    if dim != int(head[8]):
        return -1
    buf = numba.carray(user_data_, (_buffer_size(head),), np.float64)
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    logp = numba.carray(logp_, (1,))
    val = _density(x, buf, out)
    logp[0] = val
    if not np.isfinite(val):
        return 4
    for i in range(dim):
        if not np.isfinite(out[i]):
            return 3
    return 0


@numba.cfunc(_EXPAND_SIG, cache=True, error_model="numpy")
def _expand_cfunc(dim, expanded, x_, out_, user_data_):
    head = numba.carray(user_data_, (_H,), np.float64)
    if dim != int(head[8]) or expanded != dim:
        return -1
    buf = numba.carray(user_data_, (_buffer_size(head),), np.float64)
    _constrain(numba.carray(x_, (dim,)), buf, numba.carray(out_, (dim,)))
    return 0


def density(sd: SubjectData, layout: str, x) -> tuple[float, np.ndarray]:
    """Log-density and gradient at an unconstrained point (for tests and benchmarks)."""
    buf, _ = pack(sd, layout)
    g = np.zeros(len(x))
    return float(_density(np.asarray(x, float), buf, g)), g


def compile_model(sd: SubjectData, layout: str = "stacked"):
    """nutpie's compiled-model object for a subject, from the cached C callbacks."""
    import pandas as pd
    from nutpie.compile_pymc import CompiledPyMCModel

    buf, blocks = pack(sd, layout)
    n_dim = sum(b.size for b in blocks)
    names, slices, shapes = [], [], []
    start = 0
    dims = {}
    for b in blocks:
        names.append(b.name)
        slices.append(slice(start, start + b.size))
        # shape parameters are scalars; shared parameters get a family dim in the stacked layout
        shapes.append(() if b.code == PARAM or layout != "stacked" else (b.size,))
        if shapes[-1]:
            dims[b.name] = ("family",)
        start += b.size
    coords = {"family": pd.Index(list(sd.families))}

    def initial_point(seed):
        rng = np.random.default_rng(seed)
        return rng.uniform(-2.0, 2.0, size=n_dim)

    return CompiledPyMCModel(
        _n_dim=n_dim,
        dims=dims,
        _coords=coords,
        _shapes={n: s for n, s in zip(names, shapes)},
        compiled_logp_func=_logp_cfunc,
        compiled_expand_func=_expand_cfunc,
        initial_point_func=initial_point,
        shared_data={},
        user_data=buf,
        n_expanded=n_dim,
        shape_info=(names, slices, shapes),
        logp_func=None,
        expand_func=None,
    )
