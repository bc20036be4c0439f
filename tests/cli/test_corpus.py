"""The malformed-input corpus (tests/corpus): every case fails cleanly, or is accepted on purpose.

A failing case must exit 2 with one line on stderr that names the file (and
line or field) and says what was expected, print no traceback, and leave no
output file and no temporary debris. ``tests/corpus/make_corpus.py`` builds
the corpus (the ``corpus`` fixture, in a temporary folder); ``cases.json``
lists the commands and expectations.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

CASES = json.loads((Path(__file__).resolve().parents[1] / "corpus" / "cases.json").read_text())
MODULES = {
    "ibo-data": "data",
    "ibo-sample": "sample",
    "ibo-compare": "compare",
    "ibo-plot": "plot",
    "ibo-cohort": "cohort",
    "ibo-reproduce": "reproduce",
}
SUFFIX = {
    "ibo-data": ".csv",
    "ibo-sample": ".nc",
    "ibo-compare": ".csv",
    "ibo-plot": ".png",
    "ibo-cohort": ".csv",
    "ibo-reproduce": "",
}


def _argv(name, corpus, tmp_path):
    spec = CASES[name]
    prog, *args = spec["command"]
    out = tmp_path / "out" / f"result{SUFFIX[prog]}"
    out.parent.mkdir()
    subst = {"{case}": str(corpus / name), "{valid}": str(corpus / "_valid" / "raw"), "{out}": str(out)}
    argv = []
    for a in args:
        for k, v in subst.items():
            a = a.replace(k, v)
        argv.append(a)
    return prog, argv, out


def test_corpus_is_big_enough(corpus):
    assert sum(1 for c in CASES.values() if c["rc"] == 2) >= 25
    assert {p.name for p in corpus.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))} >= set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_case(name, corpus, tmp_path, capsys, monkeypatch):
    spec = CASES[name]
    prog, argv, out = _argv(name, corpus, tmp_path)
    monkeypatch.chdir(tmp_path)
    main = importlib.import_module(f"ibo_pymc.cli.{MODULES[prog]}").main
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse
        rc = exc.code
    err = capsys.readouterr().err
    if spec["rc"] == 0:
        assert rc == 0, err
        return
    assert rc == 2, err
    msg = err.strip()
    assert len(msg.splitlines()) == 1, msg
    assert "Traceback" not in msg
    assert spec["expect"] in msg and spec["names"] in msg, msg
    assert not out.exists()
    assert not list(out.parent.iterdir()), "temporary debris left behind"
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize("name", ["nan-field", "netcdf-truncated", "unknown-model", "split-bad-set"])
def test_corpus_case_in_a_fresh_process(name, corpus, tmp_path):
    """The same through the installed entry point's module: exit 2, one line, no traceback."""
    prog, argv, out = _argv(name, corpus, tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", f"ibo_pymc.cli.{MODULES[prog]}", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert CASES[name]["names"] in r.stderr
    assert not out.exists()
