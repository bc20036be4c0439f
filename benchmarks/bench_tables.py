"""Building the reference argmax tables (target: under 1 s for 3 x 61 x 30 x 137).

Baseline: the straightforward loop the reference code uses (one argmax per
family, parameter, tau and delta_r1), timed on a subset and scaled.
"""

from __future__ import annotations

import time

import numpy as np

from ibo_pymc.tasks.hotspot.forward import (
    Surrogate,
    TableConfig,
    build_tables,
    get_family,
    incumbent,
)
from ibo_pymc.tasks.hotspot.forward.augmentation import allowed_window


def loop_baseline(cfg: TableConfig, n_param: int) -> float:
    s = Surrogate()
    theta = cfg.theta
    t0 = time.perf_counter()
    for fam in cfg.families:
        f = get_family(fam)
        for p in cfg.params(fam)[:n_param]:
            for tau in cfg.tau:
                for d in cfg.delta_r1:
                    mu, sd = s.predict(theta, d)
                    v = f.score(mu, sd, incumbent(d), p)
                    lo, hi = allowed_window(theta, tau, d < 0)
                    theta[int(lo) + int(np.argmax(v[int(lo) : int(hi) + 1]))]
    return (time.perf_counter() - t0) * cfg.n_param / n_param


def main() -> None:
    cfg = TableConfig()
    build_tables(cfg)  # warm-up
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        build_tables(cfg)
        times.append(time.perf_counter() - t0)
    base = loop_baseline(cfg, n_param=2)
    print(f"build_tables (3 families x 61 params x 30 tau x 137 delta_r1): best {min(times):.3f} s  (target < 1 s)")
    print(f"baseline cell-by-cell loop (scaled from 2 params):           {base:.1f} s")
    print(f"speed-up: {base / min(times):.0f}x")


if __name__ == "__main__":
    main()
