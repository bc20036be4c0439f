"""What the benchmark scripts that compare with a baseline commit share: the commit checked out beside this one,
and how many values the two computed differ."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def is_commit(repo: Path, rev: str) -> bool:
    """Whether ``rev`` names a commit of the repository at ``repo``."""
    r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=repo, capture_output=True)
    return r.returncode == 0


@contextmanager
def baseline_worktree(repo: Path, rev: str, folder: Path):
    """``rev`` checked out (detached) into a temporary git worktree at ``folder``; removed, and the repository's
    worktree list pruned, however the block ends (an error, Ctrl-C, or a failed checkout half done)."""
    try:
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(folder), rev], cwd=repo, check=True)
        yield folder
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(folder)], cwd=repo, check=False, capture_output=True
        )
        subprocess.run(["git", "worktree", "prune"], cwd=repo, check=False)


def differences(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """How many of ``a``'s values ``b`` does not hold to the bit, of how many, and the largest relative
    difference (inf where the shapes differ)."""
    if a.shape != b.shape:
        return a.size, a.size, float("inf")
    if a.size == 0:
        return 0, 0, 0.0
    a, b = a.ravel(), b.ravel()
    neq = a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1)
    n = int(neq.any(axis=1).sum())
    if n == 0:
        return 0, a.size, 0.0
    d = np.abs(a.astype(float) - b.astype(float))
    return n, a.size, float(np.max(d / np.maximum(np.abs(a.astype(float)), np.finfo(float).tiny)))


def alternate(repo: Path, rev: str, rounds: int, run, folder: Path, digits: int = 2):
    """``run(root, npz)`` (a fresh process's measurement: seconds per step; its values saved to ``npz``) for the
    commit ``rev`` (checked out into ``folder / "baseline"``) and this checkout, alternately for ``rounds`` rounds
    (the order swapped each round; this machine's speed drifts by 10% within an hour), each run printed. Returns
    the runs (``{"baseline": [...], "current": [...]}``) and :func:`differences` of every value the last two runs
    saved (a value only one of them saved counts as differing)."""
    runs = {"baseline": [], "current": []}
    with baseline_worktree(repo, rev, folder / "baseline") as base:
        for r in range(rounds):
            order = (("baseline", base), ("current", repo))
            for name, root in order if r % 2 == 0 else order[::-1]:
                runs[name].append(run(root, folder / f"{name}.npz"))
                times = ", ".join(f"{k} {v:.{digits}f} s" for k, v in runs[name][-1].items())
                print(f"round {r + 1} {name}: {times}", flush=True)
        with np.load(folder / "baseline.npz") as a, np.load(folder / "current.npz") as b:
            keys = sorted(set(a.files) | set(b.files))
            differ = {k: differences(a[k], b[k]) if k in a.files and k in b.files else (1, 1, np.inf) for k in keys}
    return runs, differ


def report(runs: dict, differ: dict, keys_of, width: int, digits: int = 2) -> int:
    """Each step's median seconds, the ratio and how many of its values differ (``keys_of(step)``: the last
    parts of the value names, after the last '-', that belong to the step); returns the exit status (1 where any
    value differs)."""
    import statistics

    print(f"{'step':{width}s} {'baseline s':>11s} {'current s':>10s} {'ratio':>7s}  values that differ")
    for step in runs["baseline"][0]:
        before = statistics.median(x[step] for x in runs["baseline"])
        now = statistics.median(x[step] for x in runs["current"])
        mine = [d for k, d in differ.items() if k.rsplit("-", 1)[-1] in keys_of(step)]
        count, total = sum(n for n, _, _ in mine), sum(size for _, size, _ in mine)
        worst = max((r for _, _, r in mine), default=0.0)
        print(
            f"{step:{width}s} {before:11.{digits}f} {now:10.{digits}f} {before / now:6.2f}x  "
            f"{count} of {total} (at most {worst:.1e})"
        )
    return 0 if all(n == 0 for n, _, _ in differ.values()) else 1


def worker_run(root: Path, argv: list[str], **env) -> dict:
    """A benchmark script's measurement (``argv``: the script and its worker's arguments) in a fresh process on
    the package at ``root`` (``PYTHONPATH`` comes before the editable install's finder), with ``env`` added to
    the environment: the seconds per step it prints as JSON on its last line."""
    import json
    import os
    import sys

    r = subprocess.run(
        [sys.executable, *argv], env={**os.environ, "PYTHONPATH": str(root), **env}, cwd=root, capture_output=True,
        text=True,
    )  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"{root}: the measurement failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def checked_inputs(parser, repo: Path, data: str, rev: str, what: str) -> str:
    """Refuse (one line, exit 2) a ``--data`` that is not a folder (``what``: what it should hold) or a
    ``--baseline`` that is not a commit of ``repo``; returns ``data`` made absolute (the measurements run in
    each checkout's folder)."""
    if not Path(data).is_dir():
        parser.error(f"--data: {data} is not a folder (expected {what})")
    if not is_commit(repo, rev):
        parser.error(f"--baseline: {rev!r} is not a commit of this repository")
    return str(Path(data).resolve())
