"""Test helper: start a command, wait for a line on its stderr, let it run on, then send it a signal."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest


def signal_after(cmd, ready: str, sig, *, settle: float, stop_timeout: float, cwd=None) -> tuple[int, str]:
    """Run ``cmd``; once a stderr line contains ``ready``, wait ``settle`` s and send ``sig``.

    Returns ``(exit code, stderr)``; fails the test if the run ended before the
    signal or did not stop within ``stop_timeout`` s of it.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while time.time() < deadline and not any(ready in ln for ln in lines) and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(settle)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(sig)
    try:
        proc.wait(timeout=stop_timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the run did not stop within {stop_timeout:g} s of the signal")
    reader.join(timeout=10)
    return proc.returncode, "".join(lines)
