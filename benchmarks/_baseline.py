"""What the benchmark scripts that compare with a baseline commit share: the commit checked out beside this one."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path


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
