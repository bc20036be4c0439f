"""A stop the user asked for (Ctrl-C, SIGTERM), remembered until it takes effect.

The command-line tools turn SIGINT and SIGTERM into exceptions raised in the main thread (``KeyboardInterrupt``,
:class:`~ibo_pymc.cli._common.Terminated`), so that a run unwinds and removes what it had half written. An
exception raised at an arbitrary point can be lost, though: a signal that arrives while a library initialises a
compiled extension surfaces there as that library's own error, which it may catch and pass over (matplotlib does
so for its 3-D axes, whose import is part of ArviZ's), and the run then carries on and writes its output as if
nothing had happened. So the handlers also record the request here (:func:`request`), and the points where a run
commits its work check it: :func:`ibo_pymc.io.atomic_path` before it renames a finished file over its destination
(:func:`raise_if_requested`), the command's wrapper when the command returns. A stop is honoured at the latest
there, and never leaves a file behind.

Only the command-line tools record requests; a notebook or a script that calls the package is not affected.
"""

from __future__ import annotations

_requested: type[BaseException] | None = None


def request(exception: type[BaseException]) -> None:
    """Record that the user asked to stop, and with which exception the run should end."""
    global _requested
    _requested = exception


def requested() -> type[BaseException] | None:
    """The exception a recorded stop asks for, or None."""
    return _requested


def raise_if_requested() -> None:
    """Raise the exception of a recorded stop (a commit point: nothing is committed after a stop)."""
    if _requested is not None:
        raise _requested()


def clear() -> None:
    """Forget any recorded stop (a command starting, or one that has ended)."""
    global _requested
    _requested = None
