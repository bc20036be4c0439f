"""One engine for every task (issue 30) and the hotspot fits' wall time (issue 33, item 1): the code before the
common engine and this checkout, measured in the same run.

    python benchmarks/bench_engine.py [--baseline f9f5ba6] [--participants 1,4,6,7] [--repeat 3] [--cohort]

The baseline is a commit of this repository (default: the last one before the engine was made common),
checked out into a temporary git worktree and run from there; the current code is this checkout. Each
stage runs the commands a user types, in fresh processes, as wall time:

* ``ibo-sample --subject 28`` warm (the median of ``--repeat`` runs after one that fills Numba's on-disk caches);
* ``ibo-sample --task gridsearch --subject P --context spatial`` for each of ``--participants`` (warm: one
  short fit first);
* with ``--cohort``, ``ibo-cohort run`` on the hotspot study's 84 default fits, fresh, on 2 workers (about
  4 minutes each), and whether the two runs' log evidences agree.

Prints one row per stage: baseline s, current s, and baseline / current (above 1: the current code is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
#: the last commit before issue 30 ("One engine for every task") began
BASELINE = "f9f5ba6"


def command_wall_time(root: Path, module: str, args: list[str], env: dict) -> float:
    """Run the command ``ibo-<module> args`` from the code at ``root`` in a fresh process, as the installed
    program runs (``main()`` reading ``sys.argv``, whose first item is the program's name); its wall time."""
    code = f"import sys; sys.argv[0] = 'ibo-{module}'; from ibo_pymc.cli.{module} import main; sys.exit(main())"
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**env, "PYTHONPATH": str(root)},
        cwd=root,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{root} {module} {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return seconds


def _stages(root: Path, work: Path, participants: list[int], cohort: bool, data: str, env: dict, repeat: int) -> dict:
    out = {}
    work.mkdir(parents=True, exist_ok=True)
    s28 = ["--subject", "28", "--data", f"{data}/hotspot_raw", "--quiet"]
    command_wall_time(root, "sample", [*s28, "--out", str(work / "warm.nc")], env)
    out["ibo-sample --subject 28 (warm)"] = statistics.median(
        command_wall_time(root, "sample", [*s28, "--out", str(work / f"s28-{i}.nc")], env) for i in range(repeat)
    )
    if participants:
        out.update(_grid_stage(root, work, participants, data, env))
    if cohort:
        args = ["run", "--data", f"{data}/hotspot_raw", "--out", str(work / "cohort"), "--fits", str(work / "fits")]
        out["ibo-cohort run, 84 fresh fits, 2 workers"] = command_wall_time(
            root, "cohort", [*args, "--workers", "2", "--quiet"], env
        )
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
        "--participants", default="1,4,6,7", help="grid-task participants (spatial, GP); '' skips the grid stage"
    )
    p.add_argument("--repeat", type=int, default=3, help="ibo-sample --subject 28: the median of this many runs")
    p.add_argument("--cohort", action="store_true", help="also the 84-fit hotspot cohort (about 8 minutes)")
    p.add_argument("--data", default=os.environ.get("IBO_DATA_DIR", str(REPO.parent / "shared" / "data")))
    args = p.parse_args(argv)
    participants = [int(v) for v in args.participants.split(",") if v.strip()]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        tmp = Path(tmp)
        base = tmp / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.baseline], cwd=REPO, check=True)
        try:
            print(f"baseline {args.baseline}, current {REPO} (each stage in fresh processes)", file=sys.stderr)
            before = _stages(base, tmp / "run-baseline", participants, args.cohort, args.data, env, args.repeat)
            now = _stages(REPO, tmp / "run-current", participants, args.cohort, args.data, env, args.repeat)
            table = pd.DataFrame({"baseline s": before, "current s": now})
            table["baseline / current"] = table["baseline s"] / table["current s"]
            print(table.round(2).to_string())
            if args.cohort:
                a = pd.read_csv(tmp / "run-baseline" / "cohort" / "lme_models.csv", index_col=0)
                b = pd.read_csv(tmp / "run-current" / "cohort" / "lme_models.csv", index_col=0)
                diff = (a - b.reindex_like(a)).abs().max().max()
                print(f"cohort log evidences: largest difference between the two runs {diff:.3g}")
                committed = pd.read_csv(REPO / "models" / "cohort" / "lme_models.csv", index_col=0)
                diff = (committed - b.reindex_like(committed)).abs().max().max()
                print(f"  and between this run and models/cohort/lme_models.csv {diff:.3g}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
