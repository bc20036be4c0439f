"""Recovery of simulated participants by the grid task's Bayesian fit (issue 20).

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

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def one(truth, env, seed, subject):
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, fit
    from ibo_pymc.tasks.gridsearch.simulate import recovery_row, simulate_participant

    gr = simulate_participant(truth, env, np.random.default_rng(seed), subject=subject)
    idata = fit(gr, GridSearchConfig(cores=1))
    row = recovery_row(truth, gr, idata)
    ev = idata["component_evidence"]
    row["r_hat_max"] = float(ev["r_hat"].values[ev["probability"].values >= 1e-3].max())
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "cognitivemaps"))
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()

    from scipy import stats

    from ibo_pymc.cli._common import executor
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.io import write_csv
    from ibo_pymc.tasks.gridsearch.data import load_environments
    from ibo_pymc.tasks.gridsearch.simulate import recovery_truths

    envs = load_environments(args.data)
    ss = np.random.SeedSequence(args.seed)
    truths = recovery_truths(args.n, np.random.default_rng(ss.spawn(1)[0]))
    seeds = [int(s.generate_state(1)[0]) for s in ss.spawn(args.n + 1)[1:]]
    tasks = [Job(f"simulated participant {i + 1} ({t.family})", one,
                  (t, envs["smooth" if i % 2 == 0 else "rough"], seeds[i], i + 1)) for i, t in enumerate(truths)]
    with executor(argparse.Namespace(workers=args.workers, scheduler=None)) as ex:  # with the progress line
        rows = run_jobs(tasks, ex, label="recovery").raise_failures().results
    t = pd.DataFrame(rows)
    print(f"{len(t)} simulated participants (families in turn: {', '.join(sorted(t.family.unique()))})")
    print(f"true family most probable: {t['map_family'].eq(t['family']).mean():.2f}; "
          f"mean P(true family): {t['p_true_family'].mean():.3f}")
    by = t.groupby("family").agg(n=("subject", "size"), correct=("map_family", lambda s: 0),
                                 p_true=("p_true_family", "mean"))
    by["correct"] = t.assign(ok=t.map_family.eq(t.family)).groupby("family")["ok"].mean()
    print(by.round(3).to_string())
    for name in ("lambda", "beta", "tau"):
        c = t[f"{name}_covered"].dropna()
        sub = t[t[f"{name}_mean"].notna()]
        rho = stats.spearmanr(sub[name], sub[f"{name}_mean"]).statistic
        print(f"{name:>6}: 90% interval covers the truth in {c.astype(bool).mean():.2f} of {len(c)}; "
              f"rank correlation of posterior mean with truth {rho:.3f}")
    print(f"worst R-hat among relevant families: {t['r_hat_max'].max():.3f}")
    if args.csv:
        write_csv(t, args.csv, float_format="%.6g")
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
