"""Sphinx configuration of the ibo-pymc documentation (Sphinx + MyST-NB + pydata-sphinx-theme).

The tutorials are the committed, executed notebooks (``notebooks/*.ipynb``), copied into the source tree at
build time and never executed here. Every number a committed result file holds is read from that file by the
``result`` role and the ``results-table`` directive (``_ext/ibo_docs.py``), not typed into a page.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import ibo_pymc  # noqa: E402

project = "ibo-pymc"
author = "the ibo-pymc developers"
copyright = "2026, the ibo-pymc developers"  # noqa: A001
release = ibo_pymc.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "ibo_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "figures"]
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the notebooks are committed executed; the docs never run them
nb_merge_streams = True

autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_typehints = "none"
autodoc_mock_imports: list[str] = []
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = "ibo-pymc"
html_theme_options = {
    "navbar_end": ["navbar-icon-links"],
    "secondary_sidebar_items": ["page-toc"],
    "show_toc_level": 2,
}
html_static_path: list[str] = []
suppress_warnings = ["mystnb.unknown_mime_type", "config.cache"]
