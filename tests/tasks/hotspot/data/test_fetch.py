"""Fetching the raw logs over a loopback HTTP server: good files and a tampered one."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading

import pytest

from ibo_pymc.tasks.hotspot.data import fetch, verify
from ibo_pymc.tasks.hotspot.data.fetch import DataIntegrityError, registry


@pytest.fixture()
def served(tmp_path, raw_folder):
    """A mirror of the studies on 127.0.0.1 holding a copy of the raw logs in its hotspot_raw/ folder; yields (the
    copy's folder, the mirror's URL)."""
    root = tmp_path / "mirror" / "hotspot_raw"
    shutil.copytree(raw_folder, root)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no request log on stderr
            pass

    handler = functools.partial(Quiet, directory=str(root.parent))
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
    out = fetch(dest, url=url + "hotspot_raw/", progress=False)
    assert out == dest
    assert verify(dest) == []
    assert len(list(dest.glob("*.csv"))) == 56


def test_fetch_tampered_rejected(served, tmp_path):
    root, url = served
    with open(root / "sesrec40.csv", "a") as fh:
        fh.write("99999,40,0.1,0.1,1.0,1,1,3\n")
    dest = tmp_path / "cache"
    with pytest.raises(DataIntegrityError) as info:
        fetch(dest, url=url + "hotspot_raw/", progress=False)
    assert "sesrec40.csv" in str(info.value)
    assert "SHA-256" in str(info.value)
    assert not (dest / "sesrec40.csv").exists()


def test_cli_fetch_env_url_and_tamper_exit_2(served, tmp_path):
    root, url = served
    (root / "eventrec36.csv").write_text("tampered\n")
    env = {"IBO_DATA_URL": url, "PATH": "", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "ibo_pymc.cli.data", "fetch", "--dest", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        env=env,
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


def test_url_pins_the_full_commit():
    from ibo_pymc.tasks.hotspot.data.fetch import DEFAULT_BASE_URL, SOURCE_COMMIT

    assert len(SOURCE_COMMIT) == 40 and int(SOURCE_COMMIT, 16) >= 0
    assert f"/raw/{SOURCE_COMMIT}/data/raw_data/" in DEFAULT_BASE_URL


def _fresh_cache(monkeypatch, tmp_path, url):
    monkeypatch.delenv("IBO_DATA_DIR", raising=False)
    monkeypatch.setenv("IBO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("IBO_DATA_URL", url)


def test_first_fetch_prints_one_progress_line(served, tmp_path, monkeypatch, capfd):
    import logging

    from ibo_pymc.tasks.hotspot.data import resolve_data_dir

    _, url = served
    _fresh_cache(monkeypatch, tmp_path, url)
    logging.getLogger("pooch").setLevel(logging.INFO)  # pooch's own default: one line per file
    folder = resolve_data_dir()
    err = capfd.readouterr().err
    assert verify(folder) == []
    assert "Downloading" not in err
    # one line, rewritten in place (carriage returns), ending in the summary
    assert err.count("\n") == 1 and err.count("\r") >= 56 and "fetched 56 raw-log files" in err


def test_damaged_cache_file_is_fetched_again(served, tmp_path, monkeypatch, capfd):
    from ibo_pymc.tasks.hotspot.data import resolve_data_dir

    _, url = served
    _fresh_cache(monkeypatch, tmp_path, url)
    folder = resolve_data_dir(progress=False)
    good = (folder / "eventrec41.csv").read_bytes()
    with open(folder / "eventrec41.csv", "a") as fh:
        fh.write("99999,1,1,0,540,540,0,0,0,540,540,450\n")
    assert resolve_data_dir() == folder
    assert (folder / "eventrec41.csv").read_bytes() == good
    assert "eventrec41.csv" in capfd.readouterr().err


def test_damaged_cache_file_offline_says_how_to_repair(served, tmp_path, monkeypatch):
    from ibo_pymc.errors import InputError
    from ibo_pymc.tasks.hotspot.data import resolve_data_dir

    _, url = served
    _fresh_cache(monkeypatch, tmp_path, url)
    folder = resolve_data_dir(progress=False)
    with open(folder / "sesrec42.csv", "a") as fh:
        fh.write("1,2,3\n")
    monkeypatch.setenv("IBO_DATA_URL", "http://127.0.0.1:9/")  # nothing listens there
    with pytest.raises(InputError) as info:
        resolve_data_dir(progress=False)
    msg = str(info.value)
    assert "sesrec42.csv" in msg and "pinned SHA-256" in msg and "ibo-data fetch" in msg
    assert len(msg.splitlines()) == 1
