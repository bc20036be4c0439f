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


def nutpie_sample(compiled, **kwargs):
    """``nutpie.sample(compiled, **kwargs)``, with an interrupt while it samples raised as that interrupt.

    nutpie catches KeyboardInterrupt itself and returns the draws made so far, or, when the signal lands
    before the first draw, fails with ``ValueError: Sampler has no results to take``; a fit never keeps
    partial draws, and the CLI needs to know which signal (Ctrl-C or SIGTERM, a KeyboardInterrupt
    subclass) stopped it. So the sampler runs non-blocking here, and whatever interrupts the wait cancels
    it and propagates unchanged.
    """
    import nutpie

    sampler = nutpie.sample(compiled, blocking=False, **kwargs)
    try:
        return sampler.wait()
    except BaseException:
        sampler.cancel()
        raise
