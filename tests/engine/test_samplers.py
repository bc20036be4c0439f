"""The engine's nutpie call: its InferenceData (taken from nutpie's raw trace) holds the same draws and per-draw
statistics, with the same dims and coordinates, as nutpie's own conversion of the same run."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ibo_pymc as ibo
from ibo_pymc.engine.samplers import nutpie_sample

RUN = {"draws": 60, "tune": 40, "chains": 3, "cores": 1, "seed": 11, "progress_bar": False}


def _same_as_nutpie(compiled):
    import nutpie

    theirs = nutpie.sample(compiled, **RUN)
    ours = nutpie_sample(compiled, **RUN)
    assert set(ours.groups()) == {"posterior", "sample_stats"}
    assert set(ours.posterior.data_vars) == set(theirs.posterior.data_vars)
    # every per-draw statistic nutpie reports, but its warm-up flag (always False after warm-up)
    assert set(ours.sample_stats.data_vars) == {
        v for v in theirs.sample_stats.data_vars if set(theirs.sample_stats[v].dims) <= {"chain", "draw"}
    } - {"tuning"}
    for g in ("posterior", "sample_stats"):
        for v in ours[g].data_vars:
            a, b = theirs[g][v], ours[g][v]
            assert a.dims == b.dims and a.dtype == b.dtype, (g, v)
            np.testing.assert_array_equal(a.values, b.values, err_msg=f"{g}.{v}")
        used = {d for v in ours[g].data_vars for d in ours[g][v].dims}
        assert set(ours[g].coords) == {c for c in theirs[g].coords if c in used}, g
        for c in ours[g].coords:
            np.testing.assert_array_equal(theirs[g][c].values, ours[g][c].values, err_msg=f"{g} coordinate {c}")
    return ours


def test_a_python_callback_density():
    y = np.array([0.3, -0.2, 1.1, 0.7])
    priors = {"mu": ibo.UniformPrior(-3.0, 3.0), "sigma": ibo.LogNormalPrior(0.0, 1.0)}

    def loglik(p):
        import pytensor.tensor as pt

        return -0.5 * ((pt.as_tensor(y) - p["mu"]) / p["sigma"]) ** 2 - pt.log(p["sigma"]) - 0.5 * math.log(2 * math.pi)

    dens = ibo.PyTensorDensity(loglik, priors)
    ours = _same_as_nutpie(dens.nutpie_model(lambda s: np.random.default_rng(s).normal(0, 0.1, 2), exact=True))
    assert (ours.posterior.sizes["chain"], ours.posterior.sizes["draw"]) == (3, 60)
    assert all(np.isfinite(ours.posterior[v].values).all() for v in ("mu", "sigma"))


def test_a_compiled_density_with_vector_blocks(hotspot):
    """The hotspot task's stacked layout: shared parameters are vectors over a ``component`` dimension whose
    coordinate (the families) nutpie's compiled model carries."""
    from ibo_pymc.tasks.hotspot.model.compiled import compile_model
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    m = IBOModel(hotspot.observations(28))
    ours = _same_as_nutpie(compile_model(m.sd, "stacked"))
    assert ours.posterior["gamma"].dims == ("chain", "draw", "component")
    assert list(ours.posterior["component"].values) == ["PI", "EI", "UCB"]


def test_a_vector_without_coordinates_gets_arviz_default_ones(hotspot):
    """A vector block whose dimension nutpie names itself (no dims given): coordinates 0, 1, ... as nutpie's own
    conversion (ArviZ) gives them."""
    import dataclasses

    from ibo_pymc.tasks.hotspot.model.compiled import compile_model
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    cm = compile_model(IBOModel(hotspot.observations(28)).sd, "stacked")
    ours = _same_as_nutpie(dataclasses.replace(cm, dims={}, _coords={}))
    assert ours.posterior["gamma"].dims == ("chain", "draw", "gamma_dim_0")
    assert list(ours.posterior["gamma_dim_0"].values) == [0, 1, 2]


class _Column:
    """A column as nutpie's batches give it: an Arrow array (C data interface) with its field's metadata."""

    def __init__(self, array, metadata=None):
        self.array, self.field = array, type("Field", (), {"metadata": metadata or {}})()

    def __arrow_c_array__(self, requested_schema=None):
        return self.array.__arrow_c_array__(requested_schema)


class _Batch:
    def __init__(self, columns: dict):
        self.columns = columns
        self.column_names = list(columns)
        self.num_rows = len(next(iter(columns.values())).array)

    def column(self, name):
        return self.columns[name]


def test_rows_nutpie_left_empty_stay_padding():
    """A chain cut short: nutpie leaves rows empty (null); they stay NaN (draws) or 0 (integer statistics), the
    rows around them keep their values, and warm-up rows are dropped whether empty or not."""
    import pyarrow as pa

    from ibo_pymc.engine.samplers import _trace

    vec = {b"shape": b"2", b"dims": b"k"}
    draws = [
        _Batch({"a": _Column(pa.array([0.0, 1.0, 2.0, 3.0])), "b": _Column(pa.array([[0.0, 0.5]] * 4), vec)}),
        _Batch(
            {
                "a": _Column(pa.array([9.0, None, 5.0, None])),
                "b": _Column(pa.array([[9.0, 9.5], [1.0, 1.5], None, [3.0, 3.5]]), vec),
            }
        ),
    ]
    stats = [
        _Batch({"tuning": _Column(pa.array([True, False, False, False])), "n_steps": _Column(pa.array([7, 3, 5, 1]))}),
        _Batch(
            {"tuning": _Column(pa.array([True, False, False, False])), "n_steps": _Column(pa.array([7, None, 4, 2]))}
        ),
    ]
    results = type("Raw", (), {"get_arrow_trace": lambda self: (draws, stats)})()
    tr = _trace(results, {"k": ["x", "y"]})
    np.testing.assert_array_equal(tr.posterior["a"].values, [[1.0, 2.0, 3.0], [np.nan, 5.0, np.nan]])
    np.testing.assert_array_equal(tr.posterior["b"].values[1], [[1.0, 1.5], [np.nan, np.nan], [3.0, 3.5]])
    assert list(tr.posterior["k"].values) == ["x", "y"]
    np.testing.assert_array_equal(tr.sample_stats["n_steps"].values, [[3, 5, 1], [0, 4, 2]])
    assert tr.sample_stats["n_steps"].dtype == np.int64


def test_an_interrupted_run_is_raised_not_returned(hotspot):
    """A KeyboardInterrupt while nutpie samples cancels the run and reaches the caller (never partial draws). SIGINT
    gets Python's default handler for the test: a background job (CI's) starts with it ignored."""
    import signal
    import threading
    import time

    from ibo_pymc.tasks.hotspot.model.compiled import compile_model
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    cm = compile_model(IBOModel(hotspot.observations(28)).sd, "stacked")
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            nutpie_sample(cm, **{**RUN, "draws": 200_000})  # about a minute, unless the interrupt stops it
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, before)
    assert time.perf_counter() - t0 < 10
