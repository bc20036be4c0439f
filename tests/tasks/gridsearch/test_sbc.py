"""Simulation-based calibration of the grid model (the engine's SBC machinery with this task's replicate)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def test_one_replicate_ranks_every_quantity(environments):
    """A replicate draws its truth from the priors, simulates, fits and ranks the truth among the draws: every
    rank in 0..n_ranks, the family's index among the five, seeded."""
    from ibo_pymc.tasks.gridsearch.simulate import sbc_replicate

    envs = np.concatenate(list(environments.values()))
    row = sbc_replicate(envs, np.random.SeedSequence(3), draws=200, tune=150, n_ranks=49)
    assert row["family"] in ("UCB", "EI", "PI", "mean", "variance")
    assert row["family_index"] == ["UCB", "EI", "PI", "mean", "variance"].index(row["family"])
    for name in ("lambda", "beta", "tau", "family_draw"):
        assert 0 <= row[name] <= 49, (name, row)
    assert np.isfinite(row["max_rhat"])


@pytest.mark.slow
def test_cli_sbc_gridsearch(cogmaps_folder, tmp_path):
    from ibo_pymc.cli.simulate import main

    argv = [
        "sbc",
        "--task",
        "gridsearch",
        "--data",
        str(cogmaps_folder),
        "--reps",
        "3",
        "--out",
        str(tmp_path),
        "--workers",
        "1",
        "--quiet",
    ]
    assert main(argv) == 0
    ranks = pd.read_csv(tmp_path / "sbc-gridsearch-GP-ranks.csv")
    assert len(ranks) == 3 and {"lambda", "beta", "tau", "family_draw"} <= set(ranks.columns)
    assert (tmp_path / "sbc-gridsearch-GP-uniformity.csv").is_file() and (tmp_path / "sbc-gridsearch-GP.png").is_file()
