"""Strata: splitting a component whose conditional posterior has separated modes.

When a component's chains disagree, its pooled draws show the gap between the
modes; :func:`split_point` finds it, and the component is split there into two
strata (the hotspot task's ``split_component``), each sampled with its
prior restricted to its side and weighted by its bridge-sampled evidence.
"""

from __future__ import annotations

import numpy as np


def split_point(draws: dict, bounds: dict, bins: int = 40, depth: float = 0.2, min_share: float = 0.02):
    """Where to split a component whose chains disagree: ``(name, value)`` or ``None``.

    For each parameter, the pooled draws are binned (``bins`` over the range of
    the draws, three-bin running mean) and the bin is found where the count,
    relative to the lower of the highest counts on either side, is smallest.
    The parameter with the deepest such dip is split at its centre if the dip
    is below ``depth`` and each side holds at least ``min_share`` of the draws;
    otherwise the draws show no separated modes and ``None`` is returned.
    """
    best = (depth, None)
    for name, v in draws.items():
        v = np.asarray(v, float).ravel()
        lo, hi = v.min(), v.max()
        if not hi > lo:
            continue
        counts, edges = np.histogram(v, bins=bins, range=(lo, hi))
        m = np.convolve(counts, np.ones(3) / 3, mode="same")
        cum = np.cumsum(counts) / len(v)
        for j in range(2, bins - 2):
            if cum[j - 1] < min_share or 1 - cum[j] < min_share:
                continue
            ratio = m[j] / min(m[:j].max(), m[j + 1 :].max())
            at = 0.5 * (edges[j] + edges[j + 1])
            if ratio < best[0] and bounds[name][0] < at < bounds[name][1]:
                best = (ratio, (name, float(at)))
    return best[1]
