"""What every command shares: one-line errors, exit codes, common options.

Exit codes: 0 success; 2 bad input or usage (one line on stderr naming the
file/line/field and what was expected, no traceback); 1 internal error;
3 a fit missed its convergence targets under ``--strict``; 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM). An interrupted or terminated run unwinds
normally, so no output file is left half-written: every file is written to a
temporary name and renamed when complete (:mod:`ibo_pymc.io`). A stop is
also recorded (:mod:`ibo_pymc.stop`), so that one whose exception a library
swallowed still ends the run, at the latest before its next file is committed.
Set ``IBO_DEBUG=1`` to see tracebacks of internal errors.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

from ibo_pymc import stop
from ibo_pymc.errors import InputError


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a one-line usage error and exit code 2, and options that only some tasks have.

    :meth:`task_option` declares an option of some tasks (``--context`` of the grid task, ``--model`` of the
    hotspot task, a ``--tune`` whose default differs by task). After parsing, its default is the one of the
    ``--task`` chosen, and an option given under a task that does not have it is a usage error: an option that
    does not apply is refused, never silently ignored.
    """

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def task_option(self, *flags, tasks: dict, **kwargs) -> argparse.Action:
        """Add an option that only the tasks in ``tasks`` (task name -> its default there) have."""
        action = self.add_argument(*flags, default=None, **kwargs)
        action.tasks = dict(tasks)
        return action

    def parse_args(self, args=None, namespace=None):
        ns = super().parse_args(args, namespace)
        parsers = [self]
        for a in self._actions:  # the chosen subcommand's options too
            if isinstance(a, argparse._SubParsersAction) and getattr(ns, a.dest, None) in a.choices:
                parsers.append(a.choices[getattr(ns, a.dest)])
        task = getattr(ns, "task", "hotspot")
        for parser in parsers:
            if task not in getattr(parser, "supported_tasks", (task,)):
                parser.error(
                    f"--task {task} is not available in {parser.prog} yet; it does "
                    f"{' and '.join(parser.supported_tasks)}"
                )
            for a in parser._actions:
                if not hasattr(a, "tasks"):
                    continue
                if getattr(ns, a.dest) is None:
                    setattr(ns, a.dest, a.tasks.get(task))
                elif task not in a.tasks:
                    parser.error(
                        f"{a.option_strings[-1]} applies to --task {' or '.join(a.tasks)}, not to --task {task}"
                    )
        return ns


def add_data_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        metavar="DIR|TABLE",
        default=None,
        help="folder of raw logs (eventrec*.csv, sesrec*.csv), a tidy table of rounds (CSV or Parquet with "
        "subject,delta_r1,theta2[,session]), or 'demo' for the simulated demo cohort (generated into the "
        "per-user cache on first use); default $IBO_DATA_DIR (a folder of study folders such as hotspot_raw/ "
        "and cognitivemaps/, or the study's own folder), else the per-user cache (fetched on first use). "
        "With --task gridsearch: the cognitivemaps folder (full.csv) or a tidy table of choices",
    )


TASK_NAMES = ("hotspot", "gridsearch")


def add_task_option(p: ArgumentParser, *, supported: tuple[str, ...] = TASK_NAMES) -> None:
    """``--task``: which task's data and model (:mod:`ibo_pymc.tasks`). Every command takes it; a command that
    does not do a task yet refuses it with a usage error (``supported``), rather than running another task."""
    p.add_argument(
        "--task",
        choices=TASK_NAMES,
        default="hotspot",
        help="the task: hotspot (Sandholtz et al. 2022, default) or gridsearch (Wu et al. 2020 "
        "spatial/conceptual grid search; --data is then its folder with full.csv, or a tidy table "
        "CSV/Parquet with subject,context,round,trial,x,y,z; default $IBO_DATA_DIR/cognitivemaps, else fetched)"
        + ("" if supported == TASK_NAMES else f"; this command does {' and '.join(supported)} only"),
    )
    p.supported_tasks = supported


def add_where_options(p: ArgumentParser, *, context_help: str = "") -> None:
    """``--context`` and ``--experiment``: which part of each participant's data the grid task fits. The data
    decide which applies (:meth:`ibo_pymc.tasks.gridsearch.GridSearchTask.where`): Wu et al. 2020's data have
    contexts, Wu et al. 2018's experiments; the other is refused."""
    p.task_option(
        "--context",
        tasks={"gridsearch": None},
        choices=("spatial", "conceptual"),
        help="gridsearch, Wu et al. 2020's data: which version of the task (default spatial)" + context_help,
    )
    add_experiment_option(p)


def add_experiment_option(p: ArgumentParser) -> None:
    """``--experiment``: which of Wu et al. 2018's experiments (:func:`add_where_options`; alone in
    ``ibo-reproduce``, whose 2020 protocol covers both contexts)."""
    p.task_option(
        "--experiment",
        tasks={"gridsearch": None},
        choices=("1d", "2d"),
        help="gridsearch, Wu et al. 2018's data: the experiment, 1d (a line of 30 options) or 2d (an 11 x 11 "
        "grid); without --data it names that study (default $IBO_DATA_DIR/gridsearch2018, else fetched)",
    )


def load_task_subjects(args, *, named_only: bool = False):
    """``(task, data set, subjects, where)`` that ``--task``, ``--data``, ``--subject`` and the task's where
    options (``--context``, ``--experiment``) name: the task through the registry, the data set narrowed to what
    the where options pick (:meth:`where` of the task), every subject checked to be in it, and ``where`` the
    keyword arguments the task's methods take for it. ``named_only``: the command uses only the subjects named,
    so the task may read only theirs (not for commands whose results depend on the whole data set, such as a
    seeded random split)."""
    from ibo_pymc.tasks import get_task

    task = get_task(args.task)
    named = args.subject if named_only and args.subject not in (None, "all") else None
    given = {k: v for k in task.where_options if (v := getattr(args, k, None)) is not None}
    dataset = task.load(args.data, progress=not getattr(args, "quiet", False), subjects=named, **given)
    dataset, where = task.where(dataset, **given)
    return task, dataset, task_subjects(task, dataset, args.subject), where


def fit_settings(args) -> dict:
    """A command's sampling options (:func:`add_fit_options`) as a task's fit settings."""
    return {"draws": args.draws, "tune": args.tune, "chains": args.chains, "seed": args.seed}


def task_subjects(task, dataset, wanted) -> list[int]:
    """The subjects of ``dataset`` that ``--subject`` names (``"all"`` or None: every one; a list), each checked
    to be in the data (through the task object)."""
    known = task.subjects(dataset)
    if wanted is None or wanted == "all":
        return known
    missing = [s for s in wanted if s not in set(known)]
    if missing:
        ids = ", ".join(map(str, known)) if len(known) <= 5 else f"{', '.join(map(str, known[:4]))}, ..., {known[-1]}"
        unit = getattr(task, "unit_name", "subject")
        raise InputError(
            f"{unit} {missing[0]} is not in the data ({plural(len(known), unit)} with "
            f"{'id' if len(known) == 1 else 'ids'} {ids})",
            field="--subject",
        )
    return list(wanted)


def plural(n: int, word: str) -> str:
    """``1 subject``, ``2 subjects``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def add_fit_options(p: ArgumentParser, *, fits_help: str | None = None) -> None:
    """Sampling settings (used where a fit is missing) and the folder of saved fits."""
    p.add_argument(
        "--fits",
        metavar="DIR",
        default="models",
        help=fits_help
        or "folder of saved fits subject-NN-MODEL.nc, reused when they match the data, "
        "written when missing (default ./models)",
    )
    p.add_argument("--draws", type=positive_int, default=1000, help="kept draws per chain for new fits (default 1000)")
    add_tune_option(p)
    p.add_argument("--chains", type=positive_int, default=4, help="chains for new fits (default 4)")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0); same seed, same results")


#: each task's default number of tuning iterations per chain
TUNE = {"hotspot": 500, "gridsearch": 500}


def add_tune_option(p: ArgumentParser) -> None:
    """``--tune``, whose default is the task's own (:data:`TUNE`)."""
    if any(a.dest == "task" for a in p._actions):
        p.task_option(
            "--tune",
            tasks=TUNE,
            type=positive_int,
            help=f"tuning iterations per chain for new fits (default {', '.join(f'{k} {v}' for k, v in TUNE.items())})",
        )
    else:
        p.add_argument(
            "--tune",
            type=positive_int,
            default=TUNE["hotspot"],
            help=f"tuning iterations per chain for new fits (default {TUNE['hotspot']})",
        )


def check_suffix(value: str | None, option: str, suffixes: tuple[str, ...]) -> None:
    """An output option must name a file with one of ``suffixes`` (checked before any work is done)."""
    if value is not None and not value.lower().endswith(suffixes):
        raise InputError(f"{option} {value!r}: expected a file name ending in {' or '.join(suffixes)}", field=option)


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return v


def probability(text: str) -> float:
    """A probability strictly between 0 and 1 (``--hdi-prob 0.9``), rejected as a usage error otherwise."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), got {text!r}")
    return v


def seed_int(text: str) -> int:
    """A ``--seed``: a whole number >= 0 (NumPy's seeds), rejected as a usage error otherwise."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return v


def subject_arg(text: str) -> list[int] | str:
    """``--subject``: ``all``, a subject number, or numbers separated by commas (``5,28``); every command
    takes the same forms. Numbers come back sorted and without repeats; whether they are in the data is
    checked once the data is read."""
    if text == "all":
        return "all"
    try:
        out = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a subject number, numbers separated by commas, or 'all', got {text!r}"
        ) from None
    if not out or out[0] < 0:  # 0 is a participant id in some studies' tables; the data decide
        raise argparse.ArgumentTypeError(f"expected subject numbers >= 0 or 'all', got {text!r}")
    return out


def add_execution_options(p: argparse.ArgumentParser) -> None:
    """``--workers`` and ``--scheduler``: where the command's tasks run (:mod:`ibo_pymc.execution`)."""
    from ibo_pymc.execution import default_workers

    p.add_argument(
        "--workers",
        type=positive_int,
        default=default_workers(),
        help=f"worker processes of a local Dask cluster (default: one per core, {default_workers()} here); "
        "1 runs everything in this process",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the tasks on an existing Dask cluster (e.g. tcp://10.0.0.5:8786, as 'dask scheduler' "
        "prints); default: Dask's DASK_SCHEDULER_ADDRESS setting if any, else --workers",
    )


@contextmanager
def executor(args):
    """Where the command's tasks run (:func:`add_execution_options`), with its progress line shown.

    Yields None (this process) or a :class:`~ibo_pymc.execution.cluster.LazyCluster`
    (started when the first task is submitted). While it is open the execution
    layer's progress records (logger ``ibo_pymc.progress``) are shown as one line
    on stderr, unless ``--quiet``.
    """
    from ibo_pymc.execution import open_executor

    logger = logging.getLogger("ibo_pymc.progress")
    handler = ProgressLine()
    level, propagate = logger.level, logger.propagate
    if not getattr(args, "quiet", False):
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        with open_executor(getattr(args, "workers", 1), getattr(args, "scheduler", None), lazy=True) as ex:
            yield ex
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


class ProgressLine(logging.Handler):
    """The execution layer's progress records as one line on stderr: rewritten in place on a terminal;
    on a pipe or a log file, a line every 10% and at the end of each run of tasks."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.shown: dict = {}

    def emit(self, record) -> None:
        p = getattr(record, "progress", None)
        if p is None or p.total == 0:
            return
        end = p.done == p.total
        if sys.stderr.isatty():
            print("\r" + p.line() + " " * 4, end="\n" if end else "", file=sys.stderr, flush=True)
            return
        tenth = 10 * p.done // p.total
        if tenth > self.shown.get(p.label, -1) or end:
            self.shown[p.label] = tenth
            print(p.line(), file=sys.stderr, flush=True)


def report_failures(failures, prog: str) -> int:
    """Print each failed task on one line; exit status 1 if any failed."""
    for f in failures:
        print(f"{prog}: error: {f}", file=sys.stderr)
    return 1 if failures else 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that the run unwinds (and cleans up) normally."""


def _on_sigterm(signum, frame):
    stop.request(Terminated)  # remembered in case the exception is lost (ibo_pymc.stop)
    raise Terminated()


def _on_sigint(signum, frame):
    stop.request(KeyboardInterrupt)
    raise KeyboardInterrupt()


def run(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None, prog: str) -> int:
    """Run a command's body, mapping errors to exit codes.

    Run as the installed program (``argv`` None and ``sys.argv[0]`` the program's name), the process ends here
    with that code (:func:`_end_program`); called from Python (``main([...])``, a notebook, the tests' in-process
    calls) it returns the code.
    """
    code = _run(main, argv, prog)
    if argv is None and Path(sys.argv[0]).name == prog:
        _end_program(code)
    return code


def _end_program(code: int) -> None:
    """Flush the output and end the process without the interpreter's teardown.

    Tearing down the ~2,000 modules that PyMC's stack loads (NumPy, SciPy, xarray, ArviZ, Numba, matplotlib)
    costs about 0.5 s of every command's wall time on a 2-core machine, a tenth of ``ibo-sample --subject 28``.
    Nothing needs it by then: every output was written atomically and closed, Dask clusters were closed by
    their context managers, and the logging handlers are flushed here.
    """
    import logging

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can reach it
            pass
    logging.shutdown()
    os._exit(code)


def _stopped(prog: str, how: type[BaseException]) -> int:
    """The end of a run the user stopped: one line, exit status 143 (SIGTERM) or 130 (Ctrl-C)."""
    if issubclass(how, Terminated):
        print(f"{prog}: terminated; no output was left half-written", file=sys.stderr)
        return 143
    print(f"{prog}: interrupted; no output was left half-written", file=sys.stderr)
    return 130


def _run(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None, prog: str) -> int:
    """:func:`run`'s body: the command's errors as exit codes."""
    import signal

    previous = {}
    stop.clear()
    if threading.current_thread() is threading.main_thread():
        previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_sigterm)}
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where SIGINT is ignored
            previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_sigint)
    try:
        code = int(main(argv) or 0)
        stop.raise_if_requested()  # a stop that a library swallowed and nothing committed since
        return code
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _stopped(prog, type(exc))
    except BrokenPipeError:
        return 0
    except Exception as exc:  # internal error, or a stop a library turned into an error of its own
        if stop.requested() is not None:
            return _stopped(prog, stop.requested())
        if os.environ.get("IBO_DEBUG"):
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"{prog}: internal error: {type(exc).__name__}: {first} (set IBO_DEBUG=1 for details)", file=sys.stderr)
        return 1
    finally:
        stop.clear()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
