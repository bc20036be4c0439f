"""Speed and quality of Wu et al. (2018)'s published maximum-likelihood protocol (issue 32, items 3 and 5).

    python benchmarks/gridsearch2018_reproduction.py [--participants 3] [--workers 2] [--seed 0]
                                                     [--baseline-models RBFUCB,RBFGM,LRBFUCB,LBMTGM]

Per experiment, a seeded sample of participants is reproduced (all 24 models, the tabulated search of
:mod:`ibo_pymc.tasks.gridsearch.mle_tabulated`) on ``--workers`` processes; the wall time per participant,
times the experiment's participants, estimates the whole reproduction's, printed against the target (60 min on
2 cores for both experiments). The baseline, measured in the same run on the first sampled participant of each
experiment for ``--baseline-models``: a search without the table, L-BFGS-B (exact gradient) from a fixed grid of
starting points per fold (7 surrogate parameters x 2 taus, x 2 betas for UCB; the same box), as a general
multi-start optimiser would do. Printed: the time ratio, and the training optima's gap per fold (tabulated minus
baseline; negative: the tabulated search found the better optimum).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _args import positive_int, seed_int  # beside this script


def baseline_folds(gr, model, proto):
    """The multi-start baseline (module docstring): per fold, ``(horizon, index, train_nll)``."""
    from scipy import optimize

    from ibo_pymc.tasks.gridsearch.mle_tabulated import _objective, _Rounds, has_beta

    lo, hi = proto.log_bounds
    beta = has_beta(model.family)
    starts = []
    for th in np.linspace(lo + 0.5, hi - 0.5, 7):
        for tau in (-3.0, -1.0):
            starts += [(th, b, tau) for b in (-1.0, 1.0)] if beta else [(th, tau)]
    out = []
    for fold in proto.folds(gr):
        rounds = _Rounds(gr, sorted({fold.test, *fold.train}))
        where = {int(p): i for i, p in enumerate(rounds.positions)}
        tr = [where[p] for p in fold.train]
        ch, y = rounds.choices[tr], rounds.y[tr]
        f = _objective(ch, y, model.surrogate, model.family, proto.rule, rounds.options, beta)
        best = math.inf
        for s in starts:
            r = optimize.minimize(f, np.array(s, float), jac=True, method="L-BFGS-B", bounds=[(lo, hi)] * len(s))
            best = min(best, float(r.fun))
        out.append((fold.horizon, fold.index, best))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--participants", type=positive_int, default=3, help="sampled participants per experiment")
    ap.add_argument("--workers", type=positive_int, default=2)
    ap.add_argument("--seed", type=seed_int, default=0)
    ap.add_argument("--baseline-models", default="RBFUCB,RBFGM,LRBFUCB,LBMTGM")
    args = ap.parse_args()

    from ibo_pymc.execution import Job, open_executor, run_jobs
    from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18
    from ibo_pymc.tasks.gridsearch.mle_tabulated import cross_validate, fit_participant
    from ibo_pymc.tasks.gridsearch.protocols import protocol

    table = g18.load_gridsearch2018(None, progress=False)
    rng = np.random.default_rng(args.seed)
    total = 0.0
    with open_executor(args.workers) as ex:
        for exp in g18.EXPERIMENTS:
            ids = np.sort(table.loc[table["experiment"] == exp, "subject"].unique())
            sample = sorted(int(s) for s in rng.choice(ids, size=min(args.participants, len(ids)), replace=False))
            jobs = [
                Job(f"participant {s}", fit_participant, (g18.grid_rounds(table, s, exp), f"wu2018-{exp}"))
                for s in sample
            ]
            t0 = time.perf_counter()
            run_jobs(jobs, ex, label=f"{exp} sample").raise_failures()
            wall = time.perf_counter() - t0
            estimate = wall / len(sample) * len(ids)
            total += estimate
            print(
                f"{exp}: participants {sample}: {wall:.1f} s on {args.workers} workers; the {len(ids)} participants: "
                f"about {estimate / 60:.1f} min"
            )
            proto = protocol(f"wu2018-{exp}")
            gr = g18.grid_rounds(table, sample[0], exp)
            t_tab = t_base = 0.0
            gaps = []
            for name in args.baseline_models.split(","):
                m = proto.model(name)
                t0 = time.perf_counter()
                tab = cross_validate(gr, m, proto)
                t_tab += time.perf_counter() - t0
                t0 = time.perf_counter()
                base = baseline_folds(gr, m, proto)
                t_base += time.perf_counter() - t0
                gaps += [a.train_nll - b[2] for a, b in zip(tab, base)]
            gaps = np.array(gaps)
            print(
                f"  baseline (participant {sample[0]}, {args.baseline_models}): multi-start {t_base:.1f} s, tabulated "
                f"{t_tab:.1f} s (ratio {t_base / t_tab:.2f}); training optimum tabulated - multi-start: worst "
                f"{gaps.max():+.2e}, best {gaps.min():+.3f} nats, tabulated better by > 0.01 in "
                f"{int((gaps < -0.01).sum())} of {len(gaps)} folds"
            )
    print(f"whole reproduction, both experiments: about {total / 60:.1f} min (target 60 min; ratio {total / 3600:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
