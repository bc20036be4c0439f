"""Small numerics of mixtures shared by every task's fit: normalising log weights, and drawing
exactly a probability's share of a fixed number of draws."""

from __future__ import annotations

import numpy as np


def softmax(a, axis=-1) -> np.ndarray:
    a = np.asarray(a, float)
    m = np.max(a, axis=axis, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=axis, keepdims=True)


def logsumexp(a) -> float:
    a = np.asarray(a, float)
    m = a.max()
    return float(m + np.log(np.exp(a - m).sum()))


def largest_remainder(p, n: int) -> np.ndarray:
    """Integer counts summing to ``n`` closest to ``p * n`` (largest-remainder rounding)."""
    raw = np.asarray(p, float) * n
    base = np.floor(raw).astype(int)
    short = n - base.sum()
    if short > 0:
        base[np.argsort(-(raw - base), kind="stable")[:short]] += 1
    return base
