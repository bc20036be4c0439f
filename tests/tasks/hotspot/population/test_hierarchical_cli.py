"""``ibo-cohort hierarchical`` on the study (slow: 28 subjects' fits, or reusing them, and two population fits)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ibo_pymc.cli.cohort import main
from ibo_pymc.population.hierarchical_files import HIERARCHICAL_FILES
from tests.conftest import PAPER_SPLITS


@pytest.mark.slow
def test_hierarchical_on_three_subjects(raw_folder, tmp_path):
    out = tmp_path / "out"
    argv = [
        "hierarchical",
        "--data",
        str(raw_folder),
        "--out",
        str(out),
        "--subject",
        "26,27,28",
        "--split",
        str(PAPER_SPLITS),
        "--population-draws",
        "500",
        "--workers",
        "1",
        "--quiet",
    ]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir() if p.is_file()} == set(HIERARCHICAL_FILES.values())
    pop = pd.read_csv(out / HIERARCHICAL_FILES["population"])
    freq = pop[pop["quantity"] == "family_frequency"]
    assert freq["mean"].sum() == pytest.approx(1, abs=1e-6)
    summary = json.loads((out / HIERARCHICAL_FILES["summary"]).read_text())
    # the summary reports the population table's worst R-hat. Three subjects identify the PI and UCB shape
    # hyperparameters poorly (subject 27 sits between the families) and they mix slowly: worst R-hat 1.044
    # with these 500 draws, 1.012 with 1000, 1.011 with 2000 (ESS ~300); 28 subjects converge
    # (models/hierarchical). Here: a sane run, reported as it is.
    assert summary["r_hat"] == pytest.approx(pop["r_hat"].max(), rel=1e-3)
    assert summary["r_hat"] < 1.1 and summary["divergences"] <= 2
    held = pd.read_csv(out / HIERARCHICAL_FILES["heldout"])
    assert list(held["subject"]) == [26, 27, 28] and held[["independent", "hierarchical"]].notna().all().all()
    # what the training model's numbers rest on, per subject
    assert {"pareto_k", "pareto_k_max", "remedy", "reliable"} <= set(held.columns)
    assert held["remedy"].isin(["none", "proposal"]).all()
    weights = summary["heldout_weights"]  # the training fit's weights, summarised beside the held-out lppd
    assert weights["unreliable"] == int((~held["reliable"]).sum())
    assert weights["refined"] == int((held["remedy"] == "proposal").sum())
    assert weights["max_pareto_k_max"] == pytest.approx(held["pareto_k_max"].max(), rel=1e-5)
    subjects = pd.read_csv(out / HIERARCHICAL_FILES["subjects"])
    assert set(subjects["parameter"]) == {"gamma", "w", "tau_neg", "tau_pos"}


def test_hierarchical_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["hierarchical", "--out", "x", "--subject", "1,b"])
    assert exc.value.code == 2
    assert "--subject" in capsys.readouterr().err
