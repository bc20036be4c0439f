"""What the ibo-pymc docs add to Sphinx: numbers read from the committed result files, the command-line
reference read from the parsers, and the tutorials copied from ``notebooks/``.

* ``{result}`FILE;COLUMN;QUERY;FORMAT``` (MyST) -- one number of a committed result file under ``models/``:
  the value of ``COLUMN`` in the one row of the CSV ``FILE`` where the pandas ``QUERY`` holds (``QUERY`` may
  be empty for a one-row file; ``sum(COLUMN)``, ``max(COLUMN)``, ``min(COLUMN)``, ``mean(COLUMN)``,
  ``median(COLUMN)``, ``nunique(COLUMN)`` (distinct values) and ``count`` aggregate over the rows where it
  holds), formatted with the Python format spec ``FORMAT`` (default ``g``).
  A JSON file: ``FILE;KEY;FORMAT``, the key dotted. A missing file, column or row is a build error, so a page
  never shows a number its file no longer holds.
* ``results-table`` -- a committed CSV as a table (options ``columns``, ``query``, ``format``).
* ``cli-help`` -- a command's ``--help`` (and its subcommands'), as the installed parser prints it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxRole

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "models"


def _frame(file: str):
    import pandas as pd

    path = MODELS / file
    if not path.is_file():
        raise ExtensionError(f"result file models/{file} does not exist")
    return pd.read_csv(path)


def result_value(spec: str) -> str:
    """The text of one ``result`` role (module docstring)."""
    parts = spec.split(";")
    if len(parts) < 2:
        raise ExtensionError(f"result {spec!r}: expected FILE;COLUMN[;QUERY[;FORMAT]]")
    file, column = parts[0].strip(), parts[1].strip()
    query = parts[2].strip() if len(parts) > 2 else ""
    fmt = parts[3].strip() if len(parts) > 3 and parts[3].strip() else "g"
    if file.endswith(".json"):  # FILE;KEY[;FORMAT]: no query
        fmt = parts[-1].strip() if len(parts) > 2 and parts[-1].strip() else "g"
        value = json.loads((MODELS / file).read_text())
        for key in column.split("."):
            value = value[key]
        return format(value, fmt)
    df = _frame(file)
    rows = df.query(query) if query else df
    for agg in ("sum", "max", "min", "mean", "median", "nunique"):
        if column.startswith(f"{agg}(") and column.endswith(")"):
            if rows.empty and agg in ("max", "min", "mean", "median"):  # would print nan
                raise ExtensionError(f"result {spec!r}: no row of models/{file} matches")
            return format(getattr(rows[column[len(agg) + 1 : -1]], agg)(), fmt)
    if column == "count":
        return format(len(rows), fmt)
    if column not in rows:
        raise ExtensionError(f"result {spec!r}: models/{file} has no column {column!r}")
    if len(rows) != 1:
        raise ExtensionError(f"result {spec!r}: {len(rows)} rows of models/{file} match, expected one")
    return format(rows[column].iloc[0], fmt)


class ResultRole(SphinxRole):
    def run(self):
        try:
            text = result_value(self.text)
        except (ExtensionError, KeyError, ValueError) as exc:
            msg = self.inliner.reporter.error(f"result {self.text!r}: {exc}", line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        return [nodes.Text(text)], []


class ResultsTable(Directive):
    """A committed CSV under ``models/`` as a table."""

    required_arguments = 1
    option_spec = {
        "columns": directives.unchanged,
        "query": directives.unchanged,
        "format": directives.unchanged,
        "header": directives.unchanged,
    }

    def run(self):
        df = _frame(self.arguments[0])
        if "query" in self.options:
            df = df.query(self.options["query"])
        if "columns" in self.options:
            df = df[[c.strip() for c in self.options["columns"].split(",")]]
        fmt = self.options.get("format", ".4g")
        table = nodes.table()
        group = nodes.tgroup(cols=len(df.columns))
        table += group
        group.extend(nodes.colspec(colwidth=1) for _ in df.columns)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body

        def row(values):
            r = nodes.row()
            for v in values:
                entry = nodes.entry()
                entry += nodes.paragraph(text=v)
                r += entry
            return r

        head += row([str(c) for c in df.columns])
        for rec in df.itertuples(index=False):
            body += row(["" if v != v else (format(v, fmt) if isinstance(v, float) else str(v)) for v in rec])
        return [table]


class CliHelp(Directive):
    """``--help`` of a command (module ``ibo_pymc.cli.NAME``), and of each of its subcommands."""

    required_arguments = 1

    def run(self):
        import argparse
        import importlib
        import os

        os.environ["COLUMNS"] = "100"
        parser = importlib.import_module(f"ibo_pymc.cli.{self.arguments[0]}").build_parser()
        out = [nodes.literal_block(text=parser.format_help())]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    section = nodes.rubric(text=f"{parser.prog} {name}")
                    out += [section, nodes.literal_block(text=sub.format_help())]
        return out


def copy_notebooks(app):
    """The executed notebooks into ``tutorials/generated/`` (ignored by git; never executed here)."""
    dest = Path(app.srcdir) / "tutorials" / "generated"
    dest.mkdir(parents=True, exist_ok=True)
    for nb in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        target = dest / nb.name
        if not target.exists() or target.read_bytes() != nb.read_bytes():
            shutil.copyfile(nb, target)


def setup(app):
    app.add_role("result", ResultRole())
    app.add_directive("results-table", ResultsTable)
    app.add_directive("cli-help", CliHelp)
    app.connect("builder-inited", copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
