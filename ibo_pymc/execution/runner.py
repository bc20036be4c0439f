"""Run independent tasks anywhere: in this process, a ``concurrent.futures`` pool, or a Dask cluster.

Everything in the package that loops over subjects or replicates (cohort fits,
grid reproduction, coverage and SBC replicates, comparison rows) builds a list
of :class:`Job` objects and hands them to :func:`run_jobs`:

* ``executor=None`` runs them one after another in this process;
* a ``distributed.Client`` (a ``LocalCluster`` or any cluster; see
  :mod:`ibo_pymc.execution.cluster`) or any ``concurrent.futures.Executor``
  runs them side by side.

Results come back as they complete (``on_result`` is called in this process
for each, e.g. to write a fit atomically the moment it exists) and are also
returned in the tasks' order. Side by side, tasks start in order of their
``cost`` (largest first, ties in the tasks' order): the longest tasks do not
start last and leave the other workers idle at the end. A task that raises does not stop the others: it
is reported as a :class:`JobFailure` naming the task (``"subject 7, model
tau"``) and its one-line error. Ctrl-C cancels what has not run and re-raises.
Each task carries its own seed in its arguments, so the results do not depend
on where or in which order the tasks ran.

Progress is logged (logger ``ibo_pymc.progress``, level INFO) as one line per
change: ``LABEL: 12/84 done, 1 failed, 2 running``; the command-line tools
show it as a single updating line.

This module imports nothing of the package, so every layer can use it; the
cluster set-up is :mod:`ibo_pymc.execution.cluster`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("ibo_pymc.progress")


@dataclass(frozen=True)
class Job:
    """One independent piece of work: ``fn(*args, **kwargs)``, named by ``key`` in progress and errors.

    ``fn`` must be importable by name (a module-level function) so that a worker
    process can rebuild it; ``args`` carry everything the task needs (data,
    configuration, seed). ``cost``: the task's expected run time in any unit
    shared by the tasks of one run (e.g. the observations it fits); only the
    order in which tasks start depends on it, never a result.
    """

    key: str
    fn: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    cost: float = 0.0

    def __call__(self):
        return self.fn(*self.args, **self.kwargs)


@dataclass(frozen=True)
class JobFailure:
    key: str
    error: str

    def __str__(self) -> str:
        return f"{self.key}: {self.error}"


class JobError(RuntimeError):
    """Some tasks failed (the others finished); ``failures`` names them."""

    def __init__(self, failures: Sequence[JobFailure]):
        self.failures = list(failures)
        first = self.failures[0]
        more = f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        super().__init__(f"{first}{more}")


@dataclass
class Outcome:
    """Results in the tasks' order (``None`` where a task failed) and the failures."""

    results: list
    failures: list[JobFailure]
    seconds: float = 0.0

    def raise_failures(self) -> Outcome:
        if self.failures:
            raise JobError(self.failures)
        return self


@dataclass(frozen=True)
class Progress:
    label: str
    total: int
    done: int
    failed: int
    running: int
    seconds: float

    def line(self) -> str:
        return (
            f"{self.label}: {self.done}/{self.total} done, {self.failed} failed, {self.running} running, "
            f"{self.seconds:.0f} s"
        )


def one_line(exc: BaseException) -> str:
    """An exception as one line: ``Type: message`` (first line only)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def is_dask_client(executor) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "scheduler_info")


def materialize(executor):
    """The executor itself, or the client of a lazily started cluster
    (:class:`~ibo_pymc.execution.cluster.LazyCluster`)."""
    start = getattr(executor, "materialize", None)
    return start() if start is not None else executor


def slots(executor) -> int:
    """How many tasks the executor runs at once (1 in this process)."""
    if executor is None:
        return 1
    own = getattr(executor, "slots", None)
    if callable(own):  # a lazily started cluster knows without starting
        return own()
    if is_dask_client(executor):
        try:
            return max(1, sum(executor.nthreads().values()))
        except Exception:  # noqa: BLE001 - a scheduler that does not answer: count one
            return 1
    return int(getattr(executor, "_max_workers", 1) or 1)


def run_jobs(
    tasks: Iterable[Job],
    executor=None,
    *,
    label: str = "tasks",
    on_result: Callable[[int, Any], None] | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Outcome:
    """Run every task and gather the results as they complete (module docstring).

    ``on_result(index, result)`` runs in this process for each task that
    succeeds, as it completes; an exception it raises counts as that task's
    failure. ``progress`` receives a :class:`Progress` at the start and after
    every completion (default: log it on ``ibo_pymc.progress`` at level INFO, the
    :class:`Progress` as the record's ``progress`` attribute).
    """
    tasks = list(tasks)
    n = len(tasks)
    if n:
        executor = materialize(executor)
    results: list = [None] * n
    failures: dict[int, JobFailure] = {}
    t0 = time.perf_counter()
    width = slots(executor)
    report = progress or (lambda p: log.info(p.line(), extra={"progress": p}))

    def tell(done: int):
        running = min(n - done, width)
        report(Progress(label, n, done, len(failures), running, time.perf_counter() - t0))

    if executor is None:
        completions = _completions_here(tasks)
    elif is_dask_client(executor):
        completions = _completions_dask(executor, tasks, label)
    else:
        completions = _completions_pool(executor, tasks)
    tell(0)
    # closing: an exception here (Ctrl-C in on_result, say) reaches the generator at once, which cancels the rest
    with closing(completions):
        for done, (i, value, exc) in enumerate(completions, start=1):
            if exc is None:
                exc = _accept(on_result, i, value)
            if exc is None:
                results[i] = value
            else:
                failures[i] = JobFailure(tasks[i].key, one_line(exc))
            tell(done)
    return Outcome(results, [failures[i] for i in sorted(failures)], time.perf_counter() - t0)


def _accept(on_result, i: int, value) -> Exception | None:
    """Hand a result to ``on_result``; what it raises (but Ctrl-C) is that task's failure."""
    if on_result is None:
        return None
    try:
        on_result(i, value)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - reported as this task's failure
        return exc
    return None


def _call(job: Job):
    """Run a job (what a Dask worker or a pool's process is given: the job itself, so that its keyword arguments
    stay its own and every executor runs it the same way)."""
    return job()


def start_order(tasks: Sequence[Job]) -> list[int]:
    """The tasks' indices in the order they start side by side: largest ``cost`` first, ties in the tasks' order
    (longest processing time first, which bounds the idle tail at the end of a run by the shortest of the long
    tasks instead of the longest)."""
    return sorted(range(len(tasks)), key=lambda i: -tasks[i].cost)


def _completions_here(tasks: list[Job]) -> Iterator[tuple[int, Any, BaseException | None]]:
    """``(index, result, None)`` or ``(index, None, error)`` per task, run one after another in this process."""
    for i, task in enumerate(tasks):
        try:
            value = task()
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - one failing task does not stop the others
            yield i, None, exc
        else:
            yield i, value, None


def _completions_dask(client, tasks: list[Job], label: str) -> Iterator[tuple[int, Any, BaseException | None]]:
    """The same on a Dask cluster, as the tasks complete; leaving early cancels what has not run."""
    from distributed import as_completed

    tag = uuid.uuid4().hex[:8]
    order = start_order(tasks)
    # submitted in the start order, and with it as the priority (the scheduler runs higher priorities first)
    futures = []
    for k, i in enumerate(order):
        # through _call, so that a task's own keyword arguments never meet submit's (key, pure, priority)
        futures.append(client.submit(_call, tasks[i], key=f"{label}-{i}-{tag}", pure=False, priority=len(order) - k))
    index = {f.key: i for i, f in zip(order, futures)}
    try:
        for f in as_completed(futures):
            i = index[f.key]
            if f.status == "finished":
                out = (i, f.result(), None)
            elif f.status == "error":
                out = (i, None, f.exception())
            else:  # cancelled (e.g. by the cluster shutting down)
                out = (i, None, RuntimeError(f"task {f.status}"))
            f.release()
            yield out
    except BaseException:
        client.cancel([f for f in futures if not f.done()])
        raise


def _completions_pool(executor, tasks: list[Job]) -> Iterator[tuple[int, Any, BaseException | None]]:
    """The same on a ``concurrent.futures`` executor."""
    from concurrent.futures import as_completed

    futures = {executor.submit(_call, tasks[i]): i for i in start_order(tasks)}  # the job whole, as on Dask
    try:
        for f in as_completed(futures):
            exc = f.exception()
            yield futures[f], (f.result() if exc is None else None), exc
    except BaseException:
        for f in futures:
            f.cancel()
        raise
