"""What NUTS's divergences in a UCB fit with tau near 0 do to its results (issue 32, the line's cohort).

    python benchmarks/gridsearch_target_accept.py [--experiment 1d] [--participant 39] [--surrogate GP]
                                                   [--target-accept 0.8,0.95] [--csv FILE]

Many of the line's participants take the UCB argmax in almost every decision, so tau's posterior sits near 0 and
the likelihood is nearly piecewise constant in beta, with steep walls that NUTS reports as divergences. This fits
one participant's UCB family alone (the default sampling settings, seed 0) at each target acceptance rate and
prints, per rate, the share of transitions that diverged, the log evidence, the 5%, 50% and 95% quantiles of
lambda (or the error variance), beta and tau, and the wall time: if the evidence and the quantiles do not move
while the divergences fall, the divergences flag the walls and do not bias what the fit reports. ``--csv``
writes the rows (atomically).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _args import comma_list, probability  # beside this script

QUANTILES = (0.05, 0.5, 0.95)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default="1d", choices=("1d", "2d"))
    ap.add_argument("--participant", type=int, default=39)
    ap.add_argument("--surrogate", default="GP", choices=("GP", "BMT"))
    ap.add_argument(
        "--target-accept",
        type=comma_list(probability, "rate"),
        default="0.8,0.95",
        help="comma-separated rates in (0, 1)",
    )
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()
    rates = args.target_accept

    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks import get_task
    from ibo_pymc.tasks.gridsearch.gridsearch2018 import grid_rounds

    task = get_task("gridsearch")
    rounds = grid_rounds(task.load(study="gridsearch2018"), args.participant, args.experiment)
    rows = []
    for rate in rates:
        t0 = time.perf_counter()
        fit = task.fit(rounds, families=("UCB",), surrogate=args.surrogate, target_accept=rate)
        row = {
            "experiment": args.experiment,
            "participant": args.participant,
            "surrogate": args.surrogate,
            "target_accept": rate,
            "divergent_share": float(np.mean(fit["sample_stats"]["diverging"].values)),
            "log_evidence": float(fit.posterior.attrs["log_evidence"]),
            "seconds": time.perf_counter() - t0,
        }
        for name in ("lambda", "error_variance", "beta", "tau"):
            if name in fit.posterior:
                draws = np.asarray(fit.posterior[name].values).ravel()
                values = np.quantile(draws, QUANTILES)
                row.update({f"{name}_q{round(q * 100):02d}": v for q, v in zip(QUANTILES, values)})
        rows.append(row)
        print(pd.DataFrame([row]).round(4).to_string(index=False), flush=True)
    if args.csv is not None:
        write_csv(pd.DataFrame(rows), args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
