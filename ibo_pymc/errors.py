"""Errors raised for bad user input.

Every problem with what a user hands us (a raw log, a split file, a command
line option) is an :class:`InputError`. Its message is one line naming the
file, the line and the field where that makes sense, and what was expected.
The command-line tools turn it into exit code 2 without a traceback.
"""

from __future__ import annotations

from os import PathLike


class InputError(ValueError):
    """Bad input: a file, field or option that is not what was expected."""

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        if self.field is not None:
            where += f"field '{self.field}': "
        return (where + self.message).replace("\n", " ")
