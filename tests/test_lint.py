"""The code passes the project's lint and format checks (ruff, configured in pyproject.toml): either fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", str(REPO)], capture_output=True, text=True, cwd=REPO
    )


def test_ruff_finds_nothing():
    r = _ruff("check", "--output-format", "concise")
    assert r.returncode == 0, r.stdout + r.stderr


def test_code_is_formatted():
    r = _ruff("format", "--check")
    assert r.returncode == 0, "run `ruff format .`:\n" + r.stdout + r.stderr
