"""What every task's sampler calls share."""

from __future__ import annotations

import contextlib
import logging

import numpy as np


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
    """``nutpie.sample(compiled, **kwargs)`` as an :class:`arviz.InferenceData` of the kept draws (``posterior``)
    and their per-draw statistics (``sample_stats``), with an interrupt while it samples raised as that interrupt.

    nutpie catches KeyboardInterrupt itself and returns the draws made so far, or, when the signal lands
    before the first draw, fails with ``ValueError: Sampler has no results to take``; a fit never keeps
    partial draws, and the CLI needs to know which signal (Ctrl-C or SIGTERM, a KeyboardInterrupt
    subclass) stopped it. So the sampler runs non-blocking here, and whatever interrupts the wait cancels
    it and propagates unchanged.

    The trace is taken raw (``return_raw_trace``) and converted by :func:`_trace`: nutpie's own conversion
    also builds the warm-up groups and every statistic through ``arviz.from_dict``, 30 ms a run that no fit
    uses (a tenth of a hotspot fit's sampling). The draws and statistics are the same values.
    """
    import nutpie

    sampler = nutpie.sample(compiled, blocking=False, return_raw_trace=True, **kwargs)
    try:
        results = sampler.wait()
    except BaseException:
        sampler.cancel()
        raise
    return _trace(results, compiled.coords)


def _trace(results, coords: dict):
    """A raw nutpie trace (Arrow record batches, one per chain, warm-up first) as InferenceData: the draws after
    warm-up, and the statistics that hold one value per draw; a chain cut short is padded with NaN, as nutpie
    pads it (the fits refuse such draws as an interrupted run)."""
    import arviz as az
    import pandas as pd
    import pyarrow
    import xarray as xr

    draw_batches, stat_batches = results.get_arrow_trace()

    def column(batch, name):  # nutpie's batches hold Arrow arrays of another binding: read through pyarrow's
        return pyarrow.array(batch.column(name))

    tuning = [int(np.count_nonzero(column(s, "tuning").to_numpy(zero_copy_only=False))) for s in stat_batches]
    length = max(b.num_rows - t for b, t in zip(draw_batches, tuning))
    groups = {}
    for group, batches in (("posterior", draw_batches), ("sample_stats", stat_batches)):
        data, dims = {}, {}
        for c, (batch, t) in enumerate(zip(batches, tuning)):
            for name in batch.column_names:
                meta = batch.column(name).field.metadata or {}
                shape = tuple(int(n) for n in meta.get(b"shape", b"").decode().split(",") if n)
                if group == "sample_stats" and (shape or name in ("tuning", "chain", "draw")):
                    continue  # per-draw vectors (gradients, mass matrices), the warm-up flag and the indices: not kept
                col = column(batch, name)
                if name not in data:
                    dtype = np.dtype((col.type.value_type if shape else col.type).to_pandas_dtype())
                    fill = np.nan if dtype.kind == "f" else 0
                    data[name] = np.full((len(batches), length, *shape), fill, dtype=dtype)
                    dims[name] = ["chain", "draw", *(d for d in meta.get(b"dims", b"").decode().split(",") if d)]
                kept = None
                if col.null_count:  # rows nutpie left empty (an interrupted chain) stay padding
                    kept = ~col.is_null().to_numpy(zero_copy_only=False)
                    col = col.drop_null()
                values = (col.flatten() if shape else col).to_numpy(zero_copy_only=False).reshape((-1, *shape))
                if kept is None:
                    data[name][c, : batch.num_rows - t] = values[t:]
                else:  # the rows kept after warm-up, in order, are the values after those kept in warm-up
                    data[name][c, np.flatnonzero(kept[t:])] = values[int(kept[:t].sum()) :]
        index = {"chain": np.arange(len(batches)), "draw": np.arange(length)}
        for n, v in data.items():  # the model's coordinates; a dimension nutpie named itself: 0, 1, ..., as ArviZ
            for d, size in zip(dims[n], v.shape):
                index.setdefault(d, pd.Index(coords[d]) if d in coords else np.arange(size))
        groups[group] = xr.Dataset({n: (dims[n], v) for n, v in data.items()}, coords=index)
    return az.InferenceData(**groups)
