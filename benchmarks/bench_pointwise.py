"""Issue 33, item 1: the hotspot fit's post-sampling likelihood work, a baseline commit against this checkout.

    python benchmarks/bench_pointwise.py [--baseline 8bac577] [--data ../shared/data/hotspot_raw]
                                         [--subjects 8,14,28|all] [--draws 12000] [--rounds 3]

After NUTS a hotspot fit evaluates its likelihood at many draws: summed over the rounds for every family at
every draw (the assembly's family probabilities) and at the bridge and proposal draws of bridge sampling, and
round by round for each draw's own family (the pointwise log-likelihood); and before NUTS it interpolates the
argmax tables at the subject's delta_r1 (``SubjectData.prepare``). This times those steps for the ``--subjects``
(all three families, the ũ± model; ``prepare`` for u, ũ and ũ±) at ``--draws`` draws (a third of them for the
pointwise form), in fresh processes of the baseline (a temporary git worktree) and of this checkout,
alternately for ``--rounds`` rounds (this machine's speed drifts by 10% within an hour), and prints each step's
median seconds, the ratio (above 1: this checkout is faster) and how many of the values the two computed
differ, and by how much at most (relative); the comparison also covers, untimed, the unaugmented model's kernels
(one tau node) and ``to_subject_order``. Exit 1 where any value differs.

Against 8bac577 a few summed values may differ in their last bit (relative 1e-16; 0 to 5 of the 504 arrays of
``--subjects all``): that commit's summed loop itself gives such differences between two processes on the same
input (measured: four of six later runs of it differed from its first), while nine runs of this checkout agreed.
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

REPO = Path(__file__).resolve().parents[1]
#: the commit before the post-sampling kernels were split (summed and pointwise) and the tables taken at the
#: unaugmented model's one tau node
BASELINE = "8bac577"


def _inputs(sd, draws: int, seed: int) -> dict:
    """Seeded draws for each family: param over its grid and a little past it, taus, gamma and w."""
    rng = np.random.default_rng(seed)
    out = {}
    for fam in sd.families:
        k = sd.rt.index(fam)
        lo, step = sd.rt.param_lo[k], sd.rt.param_step[k]
        hi = lo + step * (sd.rt.n_param - 1)
        out[fam] = (
            rng.uniform(lo - 0.02 * (hi - lo), hi + 0.02 * (hi - lo), draws),
            rng.uniform(0.0, 1.6, draws),
            rng.uniform(0.0, 1.6, draws),
            rng.uniform(0.02, 0.78, draws),
            rng.uniform(0.0, 1.0, draws),
        )
    return out


def measure(data: str, subjects: list[int] | str, draws: int, out: Path) -> dict:
    """The worker: times each step in this process (after one call that loads Numba's caches), saves the values
    to ``out`` (.npz) and returns the seconds per step."""
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.model import pointwise
    from ibo_pymc.tasks.hotspot.model.builder import SubjectData

    tables = load_tables()
    hot = load_hotspot(data, subjects=None if subjects == "all" else subjects)
    subjects = hot.subjects if subjects == "all" else subjects
    seconds = {"prepare (u, tau, tau_pm)": 0.0, "summed": 0.0, "pointwise": 0.0}
    values = {}
    for s in subjects:
        obs = hot.observations(s)
        prepared = {}
        for model in ("u", "tau", "tau_pm"):
            SubjectData.prepare(obs, model, tables)
            t0 = time.perf_counter()
            prepared[model] = SubjectData.prepare(obs, model, tables)
            seconds["prepare (u, tau, tau_pm)"] += time.perf_counter() - t0
            values[f"{s}-{model}-tables"] = prepared[model].rt.values
            values[f"{s}-{model}-order"] = prepared[model].to_subject_order(
                np.broadcast_to(np.arange(obs.n_rounds), (2, obs.n_rounds))
            )
        # the unaugmented model's kernels (one tau node) compared too, not timed
        for fam, args in _inputs(prepared["u"], 300, seed=s).items():
            for name, summed in (("summed", True), ("pointwise", False)):
                values[f"{s}-u-{fam}-{name}"] = pointwise.loglik(prepared["u"], fam, *args, summed=summed)
        sd = prepared["tau_pm"]
        for fam, args in _inputs(sd, draws, seed=s).items():
            third = tuple(a[: draws // 3] for a in args)
            for name, a, summed in (("summed", args, True), ("pointwise", third, False)):
                pointwise.loglik(sd, fam, *(v[:10] for v in a), summed=summed)
                t0 = time.perf_counter()
                v = pointwise.loglik(sd, fam, *a, summed=summed)
                seconds[name] += time.perf_counter() - t0
                values[f"{s}-{fam}-{name}"] = v
    np.savez(out, **values)
    return seconds


def _subjects_text(subjects: list[int] | str) -> str:
    return subjects if subjects == "all" else ",".join(map(str, subjects))


def _run(root: Path, args, out: Path) -> dict:
    """:func:`measure` in a fresh process on the package at ``root``."""
    argv = [__file__, "--data", args.data, "--subjects", _subjects_text(args.subjects), "--draws", str(args.draws)]
    return worker_run(root, [*argv, "--worker", str(out)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default=BASELINE, help=f"commit to compare with (default {BASELINE})")
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "hotspot_raw"))
    p.add_argument("--subjects", type=subject_arg, default="8,14,28", help="subject numbers (8,14,28) or all")
    p.add_argument(
        "--draws", type=positive_int, default=12000, help="draws per family (a third for the pointwise form)"
    )
    p.add_argument("--rounds", type=positive_int, default=3, help="both measured this many times, alternately (median)")
    p.add_argument("--worker", metavar="NPZ", help=argparse.SUPPRESS)  # one measurement, in this process
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.data, args.subjects, args.draws, Path(args.worker))))
        return 0
    if args.draws < 3:  # a third of them for the pointwise form (--rounds is checked by its parser)
        p.error(f"--draws: expected a whole number >= 3, got {args.draws}")
    args.data = checked_inputs(p, REPO, args.data, args.baseline, "the hotspot study's raw logs")
    with tempfile.TemporaryDirectory(prefix="bench-pointwise-") as tmp:
        runs, differ = alternate(
            REPO, args.baseline, args.rounds, lambda root, npz: _run(root, args, npz), Path(tmp), 3
        )
    subjects = _subjects_text(args.subjects)
    print(f"\nbaseline {args.baseline} vs this checkout; subjects {subjects}, {args.draws} draws per family")
    return report(
        runs, differ, lambda step: {"prepare (u, tau, tau_pm)": ("tables", "order")}.get(step, (step,)), 28, 3
    )


if __name__ == "__main__":
    sys.exit(main())
