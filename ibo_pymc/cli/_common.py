"""What every command shares: one-line errors, exit codes, common options.

Exit codes: 0 success; 2 bad input or usage (one line on stderr naming the
file/line/field and what was expected, no traceback); 1 internal error;
130 interrupted. Set ``IBO_DEBUG=1`` to see tracebacks of internal errors.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from ibo_pymc.errors import InputError


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a one-line usage error and exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_data_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        metavar="DIR",
        default=None,
        help="folder of raw logs (eventrec*.csv, sesrec*.csv); default $IBO_DATA_DIR, else the per-user cache "
        "(fetched on first use)",
    )


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return v


def subject_arg(text: str) -> int | str:
    if text == "all":
        return "all"
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a subject number or 'all', got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a subject number >= 1 or 'all', got {text!r}")
    return v


def run(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None, prog: str) -> int:
    """Run a command's body, mapping errors to exit codes."""
    try:
        return int(main(argv) or 0)
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # internal error
        if os.environ.get("IBO_DEBUG"):
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"{prog}: internal error: {type(exc).__name__}: {first} (set IBO_DEBUG=1 for details)", file=sys.stderr)
        return 1
