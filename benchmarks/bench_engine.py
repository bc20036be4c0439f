"""One engine for every task (issue 30) and the hotspot fits' wall time (issue 33, item 1): the code before the
common engine and this checkout, measured in the same run.

    python benchmarks/bench_engine.py [--baseline f9f5ba6] [--participants 1,4,6,7] [--repeat 3] [--cohort]
                                      [--rounds 1]

The baseline is a commit of this repository (default: the last one before the engine was made common),
checked out into a temporary git worktree and run from there; the current code is this checkout. Each
stage runs the commands a user types, in fresh processes, as wall time:

* ``ibo-sample --subject 28`` warm (the median of ``--repeat`` runs after one that fills Numba's on-disk caches);
* ``ibo-sample --task gridsearch --subject P --context spatial`` for each of ``--participants`` (warm: one
  short fit first);
* with ``--cohort``, ``ibo-cohort run`` on the hotspot study's 84 default fits, fresh, on 2 workers (about
  75 s each), and whether every run's log evidences agree with ``models/cohort/lme_models.csv``.

Prints one row per stage: baseline s, current s, and baseline / current (above 1: the current code is faster);
for ``ibo-sample`` and the cohort also their CPU seconds (user and system, the workers included): the work done,
which drifts less than wall time when the machine's speed does.
With ``--rounds N`` the two are measured N times, alternately (the baseline first in odd rounds, the current code
in even ones), and each stage's seconds are the median over the rounds, each round's printed too: this
machine's speed drifts by 10% and more within an hour (the same cohort run: 73 s, then 83 s), more than one
comparison of single runs can tell from a change of a few percent.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from _args import comma_list, positive_int, seed_int  # beside this script
from _baseline import baseline_worktree, is_commit

REPO = Path(__file__).resolve().parents[1]
#: the last commit before issue 30 ("One engine for every task") began
BASELINE = "f9f5ba6"


def command_wall_time(root: Path, module: str, args: list[str], env: dict) -> float:
    """Run the command ``ibo-<module> args`` from the code at ``root`` in a fresh process, as the installed
    program runs (``main()`` reading ``sys.argv``, whose first item is the program's name); its wall time."""
    return command_times(root, module, args, env)[0]


def command_times(root: Path, module: str, args: list[str], env: dict) -> tuple[float, float]:
    """:func:`command_wall_time`'s run: its wall time and the CPU seconds (user and system) of the process and
    the processes it waited for (a cohort's Dask workers)."""
    code = f"import sys; sys.argv[0] = 'ibo-{module}'; from ibo_pymc.cli.{module} import main; sys.exit(main())"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**env, "PYTHONPATH": str(root)},
        cwd=root,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{root} {module} {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _stages(root: Path, work: Path, participants: list[int], cohort: bool, data: str, env: dict, repeat: int) -> dict:
    out = {}
    work.mkdir(parents=True, exist_ok=True)
    s28 = ["--subject", "28", "--data", f"{data}/hotspot_raw", "--quiet"]
    command_wall_time(root, "sample", [*s28, "--out", str(work / "warm.nc")], env)
    runs = [command_times(root, "sample", [*s28, "--out", str(work / f"s28-{i}.nc")], env) for i in range(repeat)]
    out["ibo-sample --subject 28 (warm)"] = statistics.median(w for w, _ in runs)
    out["ibo-sample --subject 28 (warm), CPU"] = statistics.median(c for _, c in runs)
    if participants:
        out.update(_grid_stage(root, work, participants, data, env))
    if cohort:
        args = ["run", "--data", f"{data}/hotspot_raw", "--out", str(work / "cohort"), "--fits", str(work / "fits")]
        wall, cpu = command_times(root, "cohort", [*args, "--workers", "2", "--quiet"], env)
        out["ibo-cohort run, 84 fresh fits, 2 workers"] = wall
        out["ibo-cohort run, 84 fresh fits, 2 workers, CPU"] = cpu
    return out


def _grid_stage(root: Path, work: Path, participants: list[int], data: str, env: dict) -> dict:
    out = {}
    grid = ["--task", "gridsearch", "--context", "spatial", "--data", f"{data}/cognitivemaps", "--quiet"]
    warm = [*grid, "--subject", str(participants[0]), "--draws", "50", "--tune", "50"]
    command_wall_time(root, "sample", [*warm, "--out", str(work / "gwarm.nc")], env)
    out[f"grid fits, participants {','.join(map(str, participants))} (warm)"] = sum(
        command_wall_time(root, "sample", [*grid, "--subject", str(p), "--out", str(work / f"g{p}.nc")], env)
        for p in participants
    )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default=BASELINE, help=f"commit to compare with (default {BASELINE})")
    p.add_argument(
        "--participants",
        type=lambda t: comma_list(seed_int, "participant number")(t) if t.strip() else [],
        default="1,4,6,7",
        help="grid-task participants (spatial, GP); '' skips the grid stage",
    )
    p.add_argument(
        "--repeat", type=positive_int, default=3, help="ibo-sample --subject 28: the median of this many runs"
    )
    p.add_argument("--cohort", action="store_true", help="also the 84-fit hotspot cohort (about 75 s a run)")
    p.add_argument("--rounds", type=positive_int, default=1, help="measure both this many times, alternately (median)")
    p.add_argument("--data", default=os.environ.get("IBO_DATA_DIR", str(REPO.parent / "shared" / "data")))
    args = p.parse_args(argv)
    participants = args.participants
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not is_commit(REPO, args.baseline):
        p.error(f"--baseline: {args.baseline!r} is not a commit of this repository")
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        tmp = Path(tmp)
        with baseline_worktree(REPO, args.baseline, tmp / "baseline") as base:
            print(f"baseline {args.baseline}, current {REPO} (each stage in fresh processes)", file=sys.stderr)
            runs = {"baseline": [], "current": []}
            for r in range(args.rounds):
                order = (
                    (("baseline", base), ("current", REPO)) if r % 2 == 0 else (("current", REPO), ("baseline", base))
                )
                for name, root in order:
                    got = _stages(root, tmp / f"run-{name}-{r}", participants, args.cohort, args.data, env, args.repeat)
                    runs[name].append(got)
                    if args.rounds > 1:
                        print(
                            f"round {r + 1} {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in got.items()), flush=True
                        )
            before, now = (pd.DataFrame(runs[n]).median() for n in ("baseline", "current"))
            table = pd.DataFrame({"baseline s": before, "current s": now})
            table["baseline / current"] = table["baseline s"] / table["current s"]
            print(table.round(2).to_string())
            if args.cohort:
                committed = pd.read_csv(REPO / "models" / "cohort" / "lme_models.csv", index_col=0)
                diffs = {
                    f"{name} {r + 1}": (
                        pd.read_csv(tmp / f"run-{name}-{r}" / "cohort" / "lme_models.csv", index_col=0)
                        .reindex_like(committed)
                        .sub(committed)
                        .abs()
                        .max()
                        .max()
                    )
                    for name in runs
                    for r in range(args.rounds)
                }
                print(
                    "cohort log evidences, largest difference from models/cohort/lme_models.csv: "
                    + ", ".join(f"{k} {v:.3g}" for k, v in diffs.items())
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
