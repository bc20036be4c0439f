"""Fetching the raw logs over a loopback HTTP server: good files and a tampered one."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading

import pytest

from ibo_pymc.data import fetch, verify
from ibo_pymc.data.fetch import DataIntegrityError, registry


@pytest.fixture()
def served(tmp_path, raw_folder):
    """A copy of the raw logs served on 127.0.0.1; yields (folder, base url)."""
    root = tmp_path / "mirror"
    shutil.copytree(raw_folder, root)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_registry_covers_56_files():
    reg = registry()
    assert len(reg) == 56
    assert all(v.startswith("sha256:") and len(v) == 71 for v in reg.values())


def test_fetch_good(served, tmp_path):
    _, url = served
    dest = tmp_path / "cache"
    out = fetch(dest, url=url, progress=False)
    assert out == dest
    assert verify(dest) == []
    assert len(list(dest.glob("*.csv"))) == 56


def test_fetch_tampered_rejected(served, tmp_path):
    root, url = served
    with open(root / "sesrec40.csv", "a") as fh:
        fh.write("99999,40,0.1,0.1,1.0,1,1,3\n")
    dest = tmp_path / "cache"
    with pytest.raises(DataIntegrityError) as info:
        fetch(dest, url=url, progress=False)
    assert "sesrec40.csv" in str(info.value)
    assert "SHA-256" in str(info.value)
    assert not (dest / "sesrec40.csv").exists()


def test_cli_fetch_env_url_and_tamper_exit_2(served, tmp_path):
    root, url = served
    (root / "eventrec36.csv").write_text("tampered\n")
    env = {"IBO_DATA_URL": url, "PATH": "", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "ibo_pymc.cli.data", "fetch", "--dest", str(tmp_path / "d")],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 2
    assert "eventrec36.csv" in proc.stderr and "Traceback" not in proc.stderr


def test_verify_detects_changed_file(tmp_path, raw_folder):
    copy = tmp_path / "copy"
    shutil.copytree(raw_folder, copy)
    (copy / "eventrec50.csv").write_text("1,2,3\n")
    (copy / "sesrec51.csv").unlink()
    problems = verify(copy)
    assert len(problems) == 2
    assert any("eventrec50.csv" in p and "does not match" in p for p in problems)
    assert any("sesrec51.csv" in p and "missing" in p for p in problems)
