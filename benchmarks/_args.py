"""What the benchmark scripts share: their options' parsers.

The command-line tools' own (:mod:`ibo_pymc.cli._common`), so that a bad value is refused as every ``ibo-*``
command refuses it: one line naming the option and what was expected, exit status 2, no traceback, before any
work starts. :func:`comma_list` makes a parser of a comma-separated list out of any of them.
"""

from __future__ import annotations

import argparse

from ibo_pymc.cli._common import positive_int, probability, seed_int, subject_arg

__all__ = ["comma_list", "positive_int", "probability", "seed_int", "subject_arg"]


def comma_list(item, what: str):
    """A parser of ``a,b,c``: each part through ``item`` (a parser raising :class:`argparse.ArgumentTypeError`
    or :class:`ValueError`), at least one part; ``what`` names one part in the message."""

    def parse(text: str) -> list:
        parts = [t.strip() for t in text.split(",") if t.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected {what}s separated by commas, got {text!r}")
        out = []
        for part in parts:
            try:
                out.append(item(part))
            except argparse.ArgumentTypeError as e:  # the part's own parser says what it expected
                raise argparse.ArgumentTypeError(f"{e} (in {text!r})") from None
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"expected {what}s separated by commas, got {part!r} in {text!r}"
                ) from None
        return out

    return parse
