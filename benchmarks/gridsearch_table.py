"""The grid task's tabulated GP posterior (issue 33, item 2; issue 32, item 5): gradients and whole fits, exact
against interpolated, in the same run.

    python benchmarks/gridsearch_table.py [--data DIR] [--fits 2020:spatial:1,2018:2d:4,...] [--csv FILE]

For each participant named (``study:part:id``; the 2020 study's contexts, the 2018 study's experiments):

1. per family, the log-density and its gradient at the participant's GP-UCB mode, exact (the posterior
   refactorised at every call: the baseline) and from the table NUTS samples with
   (:meth:`~ibo_pymc.tasks.gridsearch.density.GridDensity.sampling_buffer`), and their ratio;
2. the participant's whole GP fit (``task.fit``, all five families, the defaults) with ``gp_table=False``
   (the baseline) and with the table: wall time and ratio, the table's largest difference from the exact
   log-density at the draws (``sampling_error``), and how far the results moved: the log evidence (in units
   of its Monte-Carlo error) and each parameter's marginal posterior mean (in units of its Monte-Carlo
   standard error, sd / sqrt(ESS)).

Both fits are warm (Numba's caches filled by a first small fit), one after the other on an otherwise idle
machine.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from pathlib import Path

import numpy as np
from _timing import per_call  # beside this script

REPO = Path(__file__).resolve().parents[1]
DEFAULT = "2020:spatial:1,2020:conceptual:4,2018:1d:4,2018:2d:4,2018:2d:17"


def observations(data: Path, spec: str):
    import ibo_pymc.tasks.gridsearch as G

    study, part, sid = spec.split(":")
    task = G.GridSearchTask()
    if study == "2020":
        ds = task.load(data / "cognitivemaps", progress=False, subjects=[int(sid)])
        return task, task.observations(ds, int(sid), context=part)
    ds = task.load(data / "gridsearch2018", progress=False, experiment=part)
    return task, task.observations(ds, int(sid), context=part)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the folder of study folders")
    ap.add_argument("--fits", default=DEFAULT, help=f"participants, study:part:id (default {DEFAULT})")
    ap.add_argument("--csv", default=None, help="write the fits' rows here")
    args = ap.parse_args()

    import pandas as pd

    from ibo_pymc.engine.convergence import ess_bulk
    from ibo_pymc.engine.fitting import find_mode
    from ibo_pymc.tasks.gridsearch.density import log_density_grad
    from ibo_pymc.tasks.gridsearch.model import FAMILIES, GridSearchModel

    data = Path(args.data)
    rows = []
    for spec in args.fits.split(","):
        task, gr = observations(data, spec)
        model = GridSearchModel(gr)
        ucb = model.density("UCB")
        x0 = find_mode(ucb, model.priors("UCB"))
        print(f"{spec}: {gr.choices.shape[0]} rounds, {gr.options.size} options; gradient (us), exact / table")
        for fam in FAMILIES:
            d = model.density(fam)
            x = x0 if fam == "UCB" else np.delete(x0, 1)
            sb = d.sampling_buffer()
            exact = functools.partial(log_density_grad, d.buf, x)
            sampled = functools.partial(log_density_grad, sb, x)
            n = max(20, int(0.2 / per_call(exact, 3)))
            te, tt = per_call(exact, n), per_call(sampled, n)
            print(f"  {fam:9s} {te * 1e6:8.1f} {tt * 1e6:8.1f}   {te / tt:.2f}x")
        fits, wall = {}, {}
        for table in (False, True):
            task.fit(gr, gp_table=table, draws=50, tune=50)  # warm: Numba's caches
            t = time.perf_counter()
            fits[table] = task.fit(gr, gp_table=table)
            wall[table] = time.perf_counter() - t
        ex, tb = fits[False], fits[True]
        ev_e, ev_t = ex.posterior.attrs["log_evidence"], tb.posterior.attrs["log_evidence"]
        ev_err = math.hypot(ex.posterior.attrs["log_evidence_error"], tb.posterior.attrs["log_evidence_error"])
        moved = {}
        for name in ("lambda", "beta", "tau"):
            if name not in ex.posterior:
                continue
            a, b = ex.posterior[name].values, tb.posterior[name].values
            if np.isnan(a).any() or np.isnan(b).any():
                continue
            se = math.hypot(a.std() / math.sqrt(float(ess_bulk(a))), b.std() / math.sqrt(float(ess_bulk(b))))
            moved[name] = (b.mean() - a.mean()) / se
        err = tb.component_evidence.get("sampling_error")
        err = float(np.nanmax(err.values)) if err is not None else math.nan
        row = {
            "fit": spec,
            "exact_s": round(wall[False], 2),
            "table_s": round(wall[True], 2),
            "ratio": round(wall[False] / wall[True], 2),
            "sampling_error": err,
            "log_evidence_exact": ev_e,
            "log_evidence_table": ev_t,
            "evidence_z": (ev_t - ev_e) / ev_err if ev_err > 0 else math.nan,
            **{f"{k}_mean_z": v for k, v in moved.items()},
        }
        rows.append(row)
        print(
            f"  fit: exact {row['exact_s']:.1f} s, table {row['table_s']:.1f} s ({row['ratio']:.2f}x); "
            f"sampling error {err:.1e} nats; log evidence moved {row['evidence_z']:+.2f} MC errors; means moved "
            + ", ".join(f"{k} {v:+.2f}" for k, v in moved.items())
            + " MC s.e."
        )
    df = pd.DataFrame(rows)
    print(
        f"\nwhole fits: exact {df.exact_s.sum():.1f} s, table {df.table_s.sum():.1f} s: "
        f"{df.exact_s.sum() / df.table_s.sum():.2f}x"
    )
    if args.csv:
        from ibo_pymc.io import write_csv

        write_csv(df, args.csv, float_format="%.6g")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
