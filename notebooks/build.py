"""Write (and execute) the teaching notebooks: ``python notebooks/build.py [--execute] [NAME ...]``.

Each notebook's text and code live in a jupytext percent file beside it
(``NN_name.py``: markdown cells as ``# %% [markdown]`` comments, code cells as
``# %%`` blocks), reviewed and diffed like any Python file. This script turns
them into the committed ``.ipynb``:

* without ``--execute`` it updates the notebook's cells from the source and
  keeps the stored outputs of code cells whose code is unchanged (jupytext's
  input/output combination);
* with ``--execute`` it runs the notebook top to bottom with nbclient and
  stores the fresh outputs (figures included).

Set ``IBO_QUICK=1`` for short sampling runs (what CI does); the data come from
``IBO_DATA_DIR`` or the per-user cache, as everywhere in the package.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jupytext
import nbformat

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    """The notebooks, by their percent-format sources ``NN_name.py``."""
    return sorted(p.stem for p in HERE.glob("[0-9][0-9]_*.py"))


def source(name: str) -> nbformat.NotebookNode:
    """The notebook as written in ``NN_name.py`` (cells only, no outputs)."""
    nb = jupytext.read(HERE / f"{name}.py")
    nb.metadata.pop("jupytext", None)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def execute(nb, cwd: Path, timeout: int = 600):
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def build(name: str, run: bool = False) -> nbformat.NotebookNode:
    """The ``.ipynb`` of one notebook: executed afresh, or with the outputs of unchanged cells kept."""
    from jupytext.combine import combine_inputs_with_outputs

    nb = source(name)
    target = HERE / f"{name}.ipynb"
    if run:
        t = time.perf_counter()
        execute(nb, HERE)
        print(f"{name}: executed in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    elif target.is_file():
        old = nbformat.read(target, as_version=4)
        nb = combine_inputs_with_outputs(nb, old, fmt="py:percent")
    return nb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--execute", action="store_true", help="run each notebook and store its outputs")
    ap.add_argument("names", nargs="*", help="notebooks to build (default: all)")
    args = ap.parse_args()
    known = names()
    for name in args.names or known:
        if name not in known:
            print(f"error: no notebook source notebooks/{name}.py; expected one of {', '.join(known)}", file=sys.stderr)
            return 2
        nbformat.write(build(name, run=args.execute), HERE / f"{name}.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
