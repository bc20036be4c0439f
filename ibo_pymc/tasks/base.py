"""What a task is: the part of inverse BO that differs from one search task to another.

A task provides (:class:`Task`):

* **data**: ``load(data)`` turns what the user names (the study's files, fetched
  at a pinned commit when nothing is named; a local folder; a tidy table as
  CSV, Parquet or a DataFrame) into its tidy data set, refusing bad input with
  one-line errors; ``subjects(dataset)`` and ``observations(dataset, subject,
  ...)`` give one subject's observations;
* **the forward model**: its surrogate and candidate set, and the choice
  likelihood of an acquisition family (``families``);
* **inference**: ``fit(observations, ...)`` returns an ArviZ InferenceData of
  the family-marginalised posterior, with posterior family probabilities and
  pointwise log-likelihoods for LOO;
* **reproduction**: ``reproduce(dataset, ...)``, the published protocol of the
  study the task comes from.

What every task shares lives outside :mod:`ibo_pymc.tasks`: the inference
engine (:mod:`ibo_pymc.engine`: the model base class a task's model derives
from, the family-by-family fit, bridge sampling, the fit schema), the execution
layer that runs loops over subjects on any executor (:mod:`ibo_pymc.execution`),
pinned-file fetching and tidy tables (:mod:`ibo_pymc.data`), atomic output
(:mod:`ibo_pymc.io`), random-effects BMS (:mod:`ibo_pymc.population`), and the
command-line tools, whose ``--task`` picks the task.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Task(Protocol):
    name: str
    #: the acquisition families whose choice is marginalised
    families: tuple[str, ...]

    def load(self, data: Any = None, *, progress: bool = True, subjects: list[int] | None = None) -> Any:
        """The tidy data set that ``data`` names (None: the study's data, fetched and checked). ``subjects``: only
        these are needed, so a task may read less (the data set then holds at least them, numbered as in the
        whole; a subject that is not in the data leaves the whole read, so that the check lists what there is)."""

    def subjects(self, dataset: Any) -> list[int]:
        """The subjects of a data set."""

    def where(self, dataset: Any, **given) -> tuple[Any, dict]:
        """``(dataset, where)``: what the task's where options (``where_options``, e.g. the grid task's
        ``context`` and ``experiment``) pick in this data set, the data set narrowed to it and ``where`` the
        keyword arguments of ``observations`` and the cohort methods; an option that does not apply to these
        data is refused."""

    def observations(self, dataset: Any, subject: int, **where) -> Any:
        """One subject's observations (``where``: e.g. the grid task's ``context``)."""

    def fit(self, observations: Any, **config) -> Any:
        """The family-marginalised posterior of one subject as ArviZ InferenceData."""

    def reproduce(self, dataset: Any, **options) -> Any:
        """The published analysis of the study the task comes from."""


class Reproduction:
    """What a task's ``reproduce`` returns: the published analysis as named tables (each written as
    ``NAME.csv`` with its number format), and a report of them in words. A table is also an attribute
    (``res.table1``)."""

    def __init__(self, tables: dict, report: str, formats: dict | None = None):
        self.tables = dict(tables)
        self.report = report
        self.formats = dict.fromkeys(self.tables, "%.6g") | dict(formats or {})

    def __getattr__(self, name: str):
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"no table {name!r}; the tables are {', '.join(tables)}")


class Comparison:
    """What a task's ``compare_cohort`` returns: the comparison table (one row per subject and model), the
    execution layer's failures, and a report of the table in words."""

    def __init__(self, table, report: str, failures=(), columns=None):
        self.table = table
        self.report = report
        self.failures = list(failures)
        self.columns = list(columns) if columns is not None else (list(table.columns) if table is not None else [])
