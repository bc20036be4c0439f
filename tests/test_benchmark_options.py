"""The benchmark scripts refuse a bad option value as the ``ibo-*`` commands do: exit status 2, the option
named in one ``error:`` line after argparse's usage, no traceback, before any work (each case runs in a few
tenths of a second: nothing is loaded or fitted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
CASES = [
    ("bench_cohort.py", "--subjects", "1,x"),
    ("bench_cohort.py", "--workers", "0"),
    ("bench_engine.py", "--participants", "1,x"),
    ("bench_engine.py", "--rounds", "0"),
    ("bench_grid_kernels.py", "--participants", "a"),
    ("bench_grid_kernels.py", "--draws", "0"),
    ("bench_pointwise.py", "--subjects", "-3"),
    ("bench_pointwise.py", "--draws", "0"),
    ("gridsearch_fit_time.py", "--participants", "a"),
    ("gridsearch_fit_time.py", "--seed", "-1"),
    ("gridsearch_fit_time.py", "--tune", "0"),
    ("gridsearch_heldout.py", "--participants", "1,,z"),
    ("tuning_study.py", "--tunes", "300,0"),
    ("tuning_study.py", "--seeds", ","),
    ("gridsearch_screening.py", "--screens", "8,a"),
    ("gridsearch_target_accept.py", "--target-accept", "0.8,1.5"),
]


@pytest.mark.parametrize(("script", "option", "value"), CASES)
def test_bad_value_refused(script, option, value, tmp_path):
    r = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), f"{option}={value}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert f"error: argument {option}:" in last and "expected" in last, r.stderr
    assert not list(tmp_path.iterdir()), "nothing written"
