"""Loading all 28 subjects (target: under 2 s). Baseline: a plain pandas read of the same files."""

from __future__ import annotations

import argparse
import glob
import os
import time

import pandas as pd
from _args import positive_int  # beside this script

from ibo_pymc.tasks.hotspot.data import load_hotspot


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("IBO_DATA_DIR", "../shared/data/hotspot_raw"))
    ap.add_argument("--repeat", type=positive_int, default=5)
    a = ap.parse_args()
    load_hotspot(a.data)  # warm imports and file cache
    t = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        load_hotspot(a.data)
        t.append(time.perf_counter() - t0)
    b = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        for f in sorted(glob.glob(os.path.join(a.data, "*rec*.csv"))):
            pd.read_csv(f, header=None)
        b.append(time.perf_counter() - t0)
    print(f"load_hotspot (28 subjects, validated + derived): best {min(t):.3f} s  (target < 2 s)")
    print(f"baseline pandas.read_csv of the 56 files:        best {min(b):.3f} s")
    print(f"ratio load_hotspot / baseline: {min(t) / min(b):.1f}x")


if __name__ == "__main__":
    main()
