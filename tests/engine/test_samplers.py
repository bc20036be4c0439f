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
