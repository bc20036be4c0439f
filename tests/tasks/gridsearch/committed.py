"""The comparison of a rerun with committed reproduction rows (``fits.csv``, ``folds.csv``), shared by the
reproduction tests of both grid-search studies."""

from __future__ import annotations

import pandas as pd


def assert_same_rows(ours: pd.DataFrame, committed: pd.DataFrame) -> None:
    """``ours`` (in ``committed``'s row order and columns) equals ``committed``, each column to the tolerance its
    kind allows across NumPy/SciPy builds. An optimum's location is flat to first order, so L-BFGS-B stops
    anywhere in a small neighbourhood and another build moves the stopping point, mostly by about 1e-7
    relative, but by 4e-5 in a fold whose optimum is flatter (NumPy 2.4.6 / SciPy 1.17.1: line participant 70's
    LBMTUCB, horizon 10, fold 7; its training nLL moved 4e-10 relative): the parameters agree to 1e-4 relative,
    the training nLL (at its optimum: second order) to 1e-8, a fold's held-out nLL and pseudo-R2 (first order in
    the parameters) to 1e-5, and a participant's nLL, the sum of its 8 to 16 folds', to 1e-4 (that
    participant's moved 1.03e-5). A different optimum differs by far more: in the training nLL above all."""
    assert len(ours) == len(committed) > 0
    for column in committed.columns:
        if committed[column].dtype == object:
            assert (ours[column] == committed[column]).all(), column
            continue
        if column == "train_nLL":
            tolerance = {"rtol": 1e-8, "atol": 1e-9}
        elif column == "nLL":
            tolerance = {"rtol": 0.0, "atol": 1e-4}
        elif column in ("test_nLL", "R2"):
            tolerance = {"rtol": 0.0, "atol": 1e-5}
        else:
            tolerance = {"rtol": 1e-4, "atol": 1e-9}
        pd.testing.assert_series_equal(ours[column], committed[column], check_dtype=False, **tolerance)
