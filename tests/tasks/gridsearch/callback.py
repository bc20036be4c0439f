"""Calling the grid density's nutpie callback as nutpie does (through its C signature), for the tests."""

from __future__ import annotations

import ctypes

import numpy as np

from ibo_pymc.tasks.gridsearch import density


def call_logp(buf: np.ndarray, x, dim: int | None = None) -> tuple[int, float, np.ndarray]:
    """``(return code, log density, gradient)`` of the C callback at ``x`` over the data buffer ``buf``; ``dim``
    the dimension it is told (default ``len(x)``; another one must be refused with -1)."""
    x = np.ascontiguousarray(x, dtype=float)
    out, logp = np.zeros(len(x)), np.zeros(1)
    dbl = ctypes.POINTER(ctypes.c_double)
    rc = density._logp_cfunc.ctypes(
        len(x) if dim is None else dim,
        x.ctypes.data_as(dbl),
        out.ctypes.data_as(dbl),
        logp.ctypes.data_as(dbl),
        buf.ctypes.data_as(ctypes.c_void_p),
    )
    return rc, float(logp[0]), out
