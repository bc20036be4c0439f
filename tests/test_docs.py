"""The documentation builds with warnings as errors (a broken reference, a result file that no longer holds a
number a page reads, a docstring docutils cannot parse: each fails the suite)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("myst_nb", reason="the docs extra is not installed (pip install -e '.[docs]')")


def test_docs_build_without_warnings(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-E",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            str(REPO / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    page = (tmp_path / "html" / "validation" / "hotspot.html").read_text()
    # a number read from models/reproduction/table1.csv, not typed into the page
    import pandas as pd

    total = pd.read_csv(REPO / "models" / "reproduction" / "table1.csv").set_index("subject").loc["total", "tau_pm"]
    assert f"{float(total):.2f}" in page
    assert (tmp_path / "html" / "reference" / "generated" / "ibo_pymc.engine.model.html").is_file()


def _result_value():
    """The docs extension's ``result`` role as a function (the extension lives beside the docs, not in the
    package)."""
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        from ibo_docs import result_value
    finally:
        sys.path.pop(0)
    return result_value


def test_result_role_refuses_what_a_file_does_not_hold():
    result_value = _result_value()
    from sphinx.errors import ExtensionError

    assert result_value('reproduction/table1.csv;tau_pm;subject == "total";.2f').startswith("-")
    with pytest.raises(ExtensionError, match="no column"):
        result_value("reproduction/table1.csv;no_such_column;subject == 'total'")
    with pytest.raises(ExtensionError, match="rows"):
        result_value("reproduction/table1.csv;tau_pm")
    with pytest.raises(ExtensionError, match="does not exist"):
        result_value("reproduction/gone.csv;x")
    with pytest.raises(ExtensionError, match="no row"):  # an aggregate of nothing: a build error, not "nan"
        result_value("gridsearch/wu2018/2d/fit_time.csv;median(seconds);participant < 0")


def test_result_role_aggregates_the_rows_a_query_keeps():
    """The median of a column over the rows a query keeps, against pandas on the same rows (an even count: the
    mean of the two middle values, not the lower one)."""
    import pandas as pd

    result_value = _result_value()
    times = pd.read_csv(REPO / "models/gridsearch/wu2018/2d/fit_time.csv")
    fast = times[times.seconds <= 15]
    assert len(times) % 2 == 0
    assert result_value("gridsearch/wu2018/2d/fit_time.csv;median(seconds);;.4f") == f"{times.seconds.median():.4f}"
    assert result_value("gridsearch/wu2018/2d/fit_time.csv;median(seconds);seconds <= 15;.4f") == (
        f"{fast.seconds.median():.4f}"
    )
    assert result_value("gridsearch/wu2018/2d/fit_time.csv;count;seconds <= 15;d") == str(len(fast))


def test_docstrings_cite_the_docs_not_a_file_outside_the_repository():
    cited = [str(p.relative_to(REPO)) for p in (REPO / "ibo_pymc").rglob("*.py") if "SPEC section" in p.read_text()]
    assert not cited, f"cite a docs page or the paper's equations instead: {cited}"
