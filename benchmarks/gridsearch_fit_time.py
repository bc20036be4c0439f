"""A participant's Bayesian fit of the grid task, warm, over a seeded sample of participants (issue 32, item 5:
a fit, all families, in <= 15 s).

    python benchmarks/gridsearch_fit_time.py [--data DIR] [--experiment 2d] [--sample 10] [--seed 0]
                                             [--participants 4,17] [--surrogate GP] [--tune N] [--screen NATS]
                                             [--draws N] [--csv FILE]

Participants: ``--participants`` as named, else ``--sample`` of the experiment's participants drawn with
``--seed`` (the 2018 study's ``1d`` or ``2d``; ``spatial`` or ``conceptual``: the 2020 study's contexts). Each is
fitted with the defaults, or with ``--tune``, ``--screen`` and ``--draws`` in their place (``task.fit``: every
default family, NUTS where Laplace screening keeps it, bridge sampling, thinned reruns until the targets hold)
after one small warm-up fit (Numba's caches). Printed per fit: the wall time, how many families NUTS sampled, the
largest thinning, whether it converged; then the median, the largest and how many fits took at most the target. The
machine should be otherwise idle.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _args import positive_int, seed_int, subject_arg  # beside this script
from _grid_data import PARTS, study_part

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 15.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the folder of study folders")
    ap.add_argument("--experiment", default="2d", choices=PARTS)
    ap.add_argument("--sample", type=positive_int, default=10, help="participants drawn (default 10)")
    ap.add_argument("--seed", type=seed_int, default=0, help="seed of the draw (default 0)")
    ap.add_argument(
        "--participants", type=subject_arg, default=None, help="participants by number, comma-separated (no draw)"
    )
    ap.add_argument("--surrogate", default="GP", choices=["GP", "BMT"])
    ap.add_argument("--tune", type=positive_int, default=None, help="tuning steps per chain (default: the task's)")
    ap.add_argument("--screen", type=float, default=None, help="Laplace screening in nats (default: the engine's)")
    ap.add_argument("--draws", type=positive_int, default=None, help="kept draws per chain (default: the task's)")
    ap.add_argument("--csv", default=None, help="write the rows here")
    args = ap.parse_args()
    settings = {k: v for k, v in (("tune", args.tune), ("screen", args.screen), ("draws", args.draws)) if v is not None}

    import pandas as pd

    from ibo_pymc.tasks.gridsearch.model import convergence

    task, ds = study_part(args.data, args.experiment)
    ids = sorted(int(s) for s in task.subjects(ds))
    if args.participants:
        chosen = ids if args.participants == "all" else args.participants
    else:
        chosen = sorted(np.random.default_rng(args.seed).choice(ids, size=min(args.sample, len(ids)), replace=False))
    first = task.observations(ds, chosen[0], context=args.experiment)
    task.fit(first, surrogate=args.surrogate, draws=50, tune=50)  # warm: Numba's caches
    rows = []
    for sid in chosen:
        gr = task.observations(ds, int(sid), context=args.experiment)
        t = time.perf_counter()
        idata = task.fit(gr, surrogate=args.surrogate, **settings)
        wall = time.perf_counter() - t
        ev = idata.component_evidence
        cfg = json.loads(idata.posterior.attrs["config"])
        row = {
            "participant": int(sid),
            "tune": cfg.get("tune"),
            "draws": cfg.get("draws"),
            "screen": cfg.get("screen"),
            "seconds": round(wall, 2),
            "sampled": int((ev["method"].values == "bridge").sum()),
            "max_thin": int(ev["thin"].values.max()),
            "converged": bool(convergence(idata)["converged"].all()),
        }
        rows.append(row)
        print(
            f"participant {sid:3d}: {wall:6.1f} s, {row['sampled']} families sampled, thinning up to "
            f"{row['max_thin']}, converged {row['converged']}",
            flush=True,
        )
    df = pd.DataFrame(rows)
    print(
        f"\n{args.experiment} {args.surrogate}, {len(df)} fits: median {df.seconds.median():.1f} s, largest "
        f"{df.seconds.max():.1f} s; {int((df.seconds <= TARGET_S).sum())} of {len(df)} within {TARGET_S:.0f} s"
    )
    if args.csv:
        from ibo_pymc.io import write_csv

        write_csv(df, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
