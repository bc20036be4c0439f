"""The teaching notebooks run top to bottom (short sampling runs: IBO_QUICK=1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def test_all_eight_notebooks_are_committed_with_outputs():
    import nbformat

    assert len(NAMES) == 8
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.get("execution_count") for c in code), f"{name} is not executed"
        assert any("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", [])), (
            f"{name} has no figure"
        )
        assert not any(o.get("output_type") == "error" for c in code for o in c.get("outputs", []))


def test_committed_notebooks_match_their_source():
    """Each notebook's jupytext percent source (notebooks/NN_name.py) holds its text and code; the .ipynb is its
    executed output."""
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location("nb_build", NOTEBOOKS / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.names() == NAMES, "every notebook has a percent-format source and vice versa"
    for name in NAMES:
        src = mod.source(name)
        built = [(c.cell_type, c.source) for c in src.cells]
        committed = [(c.cell_type, c.source) for c in nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells]
        assert built == committed, f"{name}.ipynb is stale: run python notebooks/build.py --execute {name}"
        assert sum(c.cell_type == "markdown" for c in src.cells) >= 3, f"{name}.py lost its markdown cells"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name, monkeypatch, raw_folder):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("IBO_QUICK", "1")
    monkeypatch.setenv("IBO_DATA_DIR", str(raw_folder.parent))  # the studies' folders: hotspot_raw, cognitivemaps, ...
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend, as in Jupyter
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    assert not any(
        o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert os.environ["IBO_QUICK"] == "1"
