"""What every task's sampler calls share."""

from __future__ import annotations

import contextlib
import logging


@contextlib.contextmanager
def pymc_log_level(level: int | None = logging.WARNING):
    """Raise the ``pymc`` logger to ``level`` inside the block (PyMC's per-call notices: "Initializing NUTS",
    "Sampling: [...]"), restoring it after; None leaves it as it is."""
    log = logging.getLogger("pymc")
    before = log.level
    if level is not None:
        log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(before)
