"""What the benchmark scripts share: the mean time of a call."""

from __future__ import annotations

import time


def per_call(fn, n: int) -> float:
    """Seconds per call of ``fn`` over ``n`` calls, after one call to warm it (Numba's caches, allocations)."""
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n
