"""Recovery of simulated participants by the grid task's Bayesian fit (issue 20); the same as
``ibo-simulate recovery --task gridsearch``.

    python benchmarks/gridsearch_recovery.py [--n 20] [--workers 2] [--seed 0] [--csv FILE]

Participants are simulated on the study's own environments (smooth and rough in turn, 9 rounds of 20
choices) from known (family, lambda, beta, tau): the families in turn, parameters from
:func:`ibo_pymc.tasks.gridsearch.simulate.recovery_truths`. Each is fitted with the default settings
(all five families, 4 chains x 1000 draws). Prints the share whose true family is the most probable, the
mean posterior probability of the true family, the coverage of the 90% intervals of lambda, beta and tau
(given the true family), and the rank correlation of posterior means with the truth; writes every row to --csv.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _args import positive_int, seed_int  # beside this script

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=positive_int, default=20)
    ap.add_argument("--workers", type=positive_int, default=2)
    ap.add_argument("--seed", type=seed_int, default=0)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "cognitivemaps"))
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()

    from ibo_pymc.cli._common import executor
    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks import get_task

    with executor(argparse.Namespace(workers=args.workers, scheduler=None)) as ex:  # with the progress line
        t, report = get_task("gridsearch").recovery(args.data, args.n, args.seed, executor=ex)
    print(report)
    if args.csv:
        write_csv(t, args.csv, float_format="%.6g")
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
