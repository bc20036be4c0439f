"""Issue 33, item 2: the grid task's likelihood kernels, fits and summary rows, a baseline commit against this
checkout.

    python benchmarks/bench_grid_kernels.py [--baseline e5881cf] [--data ../shared/data] [--part spatial]
                                            [--participants 6,11,16,36] [--draws 4000] [--rounds 2] [--no-fits]

Each step runs in fresh processes of the baseline (a temporary git worktree) and of this checkout,
alternately for ``--rounds`` rounds, with one Numba thread (a cohort's worker runs one fit per core), after one
call that loads Numba's caches:

* ``values``: the per-round log-likelihood at ``--draws`` seeded draws of each default family, under the exact GP
  posterior: what bridge sampling, the draws' log-likelihood and the LOO's moment matching evaluate;
* ``fits``: each participant's fit at the task's defaults (GP; skipped with ``--no-fits``);
* ``gradient``: the log-density and its gradient with the tabulated posterior NUTS samples with (the cost of a
  NUTS step), at 300 of each family's posterior draws from the fit, evenly spaced (with ``--no-fits``, at 300
  points of its prior, whose ratio need not be a NUTS step's);
* ``rows``: each fit's summary row (reliable LOO: PSIS per family, moment matching, exact refits), as
  ``ibo-sample --subject all`` writes it.

It prints each step's median seconds, the ratio (above 1: this checkout is faster) and how many of the values
the two computed differ (the kernels' outputs, the fits' draws, log-likelihoods and evidences, the rows' numbers),
and by how much at most (relative). Exit 1 where any value differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _args import positive_int, subject_arg  # beside this script
from _baseline import alternate, checked_inputs, report, worker_run
from _grid_data import PARTS, study_part

REPO = Path(__file__).resolve().parents[1]
#: the commit before the value-only kernel, the vectorised choice loops and the round-by-round GP values
BASELINE = "e5881cf"
#: the fit groups whose values are compared
GROUPS = ("posterior", "conditional_posterior", "log_likelihood", "component_evidence")


def _points(prior: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` seeded points on the unconstrained scale: the prior's centre, one and a half scales either side."""
    rng = np.random.default_rng(seed)
    return rng.normal(prior[:, 0], 1.5 * prior[:, 1], size=(n, len(prior)))


def measure(data: str, part: str, participants: list[int], draws: int, fits: bool, out: Path) -> dict:
    """The worker: times each step in this process, saves the values to ``out`` (.npz), returns the seconds."""
    from ibo_pymc.engine.results import conditional
    from ibo_pymc.tasks.gridsearch import density
    from ibo_pymc.tasks.gridsearch.fits_table import summary_row
    from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, GridSearchModel

    task, ds = study_part(data, part)
    config = GridSearchConfig()
    seconds = {"values": 0.0, "fits": 0.0, "gradient": 0.0, "rows": 0.0} if fits else {"values": 0.0, "gradient": 0.0}
    values = {}
    warmed = False
    for sid in participants:
        gr = task.observations(ds, sid, context=part)
        model = GridSearchModel(gr, config)
        for fam in config.families:
            prior = config.prior_array(fam)
            z = _points(prior, draws, seed=sid)
            theta, tau = np.exp(z[:, 0]), np.exp(z[:, -1])
            beta = np.exp(z[:, 1]) if len(prior) == 3 else np.zeros(draws)
            args = (gr.choices, gr.y, "GP", fam)
            opts = {"lengths": gr.lengths, "options": gr.options}
            density.round_loglik_many(*args, theta[:5], beta[:5], tau[:5], **opts)
            t0 = time.perf_counter()
            values[f"{sid}-{fam}-values"] = density.round_loglik_many(*args, theta, beta, tau, **opts)
            seconds["values"] += time.perf_counter() - t0
        if fits:
            if not warmed:  # Numba's and nutpie's caches, ArviZ's first calls
                GridSearchModel(gr, config, draws=50, tune=50).fit()
                warmed = True
            t0 = time.perf_counter()
            model.fit()
            seconds["fits"] += time.perf_counter() - t0
        for fam in config.families:
            if fits:
                z = np.stack([np.log(conditional(model.idata, fam, n).values.ravel()) for n in config.names(fam)], 1)
                z = z[:: max(1, len(z) // 300)][:300]
            else:
                z = _points(config.prior_array(fam), 300, seed=sid)
            buf = model.density(fam).sampling_buffer()
            density.log_density_grad(buf, z[0])
            got = np.empty((len(z), 1 + z.shape[1]))
            t0 = time.perf_counter()
            for i, x in enumerate(z):
                v, g = density.log_density_grad(buf, x)
                got[i, 0], got[i, 1:] = v, g
            seconds["gradient"] += time.perf_counter() - t0
            values[f"{sid}-{fam}-gradient"] = got
        if not fits:
            continue
        for g in GROUPS:
            if g in model.idata.groups():
                for v, da in model.idata[g].data_vars.items():
                    if da.dtype.kind in "fiub":
                        values[f"{sid}-{g}-{v}-fits"] = da.values
        values[f"{sid}-log_evidence-fits"] = np.array(model.idata.posterior.attrs["log_evidence"])
        t0 = time.perf_counter()
        row = summary_row(model)
        seconds["rows"] += time.perf_counter() - t0
        values[f"{sid}-row-rows"] = np.array([float(v) for v in row.values() if isinstance(v, (int, float))])
    np.savez(out, **values)
    return seconds


def _run(root: Path, args, out: Path) -> dict:
    """:func:`measure` in a fresh process on the package at ``root``, with one Numba thread."""
    argv = [__file__, "--data", args.data, "--part", args.part, "--participants", ",".join(map(str, args.participants))]
    argv += ["--draws", str(args.draws), "--worker", str(out)] + (["--no-fits"] if args.no_fits else [])
    return worker_run(root, argv, NUMBA_NUM_THREADS="1")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default=BASELINE, help=f"commit to compare with (default {BASELINE})")
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the folder of study folders")
    p.add_argument("--part", default="spatial", choices=PARTS, help="the study's part (default spatial)")
    p.add_argument("--participants", type=subject_arg, default="6,11,16,36", help="participant numbers")
    p.add_argument("--draws", type=positive_int, default=4000, help="draws per family for the values (default 4000)")
    p.add_argument("--rounds", type=positive_int, default=2, help="both measured this many times, alternately")
    p.add_argument("--no-fits", action="store_true", help="the kernels only (no fits, no summary rows)")
    p.add_argument("--worker", metavar="NPZ", help=argparse.SUPPRESS)  # one measurement, in this process
    args = p.parse_args(argv)
    if args.participants == "all":
        p.error("--participants: expected participant numbers (all would take hours)")
    if args.worker:
        print(
            json.dumps(
                measure(args.data, args.part, args.participants, args.draws, not args.no_fits, Path(args.worker))
            )
        )
        return 0
    args.data = checked_inputs(p, REPO, args.data, args.baseline, "the folder of study folders")
    with tempfile.TemporaryDirectory(prefix="bench-grid-kernels-") as tmp:
        runs, differ = alternate(REPO, args.baseline, args.rounds, lambda root, npz: _run(root, args, npz), Path(tmp))
    who = ",".join(map(str, args.participants))
    print(f"\nbaseline {args.baseline} vs this checkout; {args.part} participants {who}, one Numba thread")
    return report(runs, differ, lambda step: (step,), 10)


if __name__ == "__main__":
    sys.exit(main())
