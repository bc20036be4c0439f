"""Log evidence tables, reading them from files, and the cohort's comparisons and files (no fitting here)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import special

from ibo_pymc.errors import InputError
from ibo_pymc.population.evidence import (
    ALL,
    COLUMNS,
    lme_table,
    partition_by,
    read_lme,
)
from ibo_pymc.population.selection import FILES, cohort_bms, write_cohort


def synthetic_evidence(n_subjects=6, seed=0) -> pd.DataFrame:
    """A long evidence table as fits would give it: families' evidences and the marginal 'all'."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(1, n_subjects + 1):
        for m in ("u", "tau", "tau_pm"):
            fam = dict(zip(("PI", "EI", "UCB"), rng.normal(-100, 5, 3)))
            for f, v in fam.items():
                rows.append((s, m, f, v, 0.01, "bridge"))
            rows.append((s, m, ALL, special.logsumexp(list(fam.values())) - np.log(3), 0.007, "bridge"))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_wide_tables_and_partitions():
    ev = synthetic_evidence()
    models = lme_table(ev, "model")
    assert list(models.columns) == ["u", "tau", "tau_pm"] and models.index.name == "subject" and len(models) == 6
    fam = lme_table(ev, "family")
    assert list(fam.columns)[:3] == ["u:PI", "u:EI", "u:UCB"] and fam.shape == (6, 9)
    # the model's evidence is the families' mean evidence (uniform family prior)
    np.testing.assert_allclose(
        models["tau"], special.logsumexp(fam[["tau:PI", "tau:EI", "tau:UCB"]], axis=1) - np.log(3)
    )
    assert partition_by(fam.columns, "family")["UCB"] == ["u:UCB", "tau:UCB", "tau_pm:UCB"]
    assert partition_by(fam.columns, "model")["tau_pm"] == ["tau_pm:PI", "tau_pm:EI", "tau_pm:UCB"]
    with pytest.raises(ValueError, match="MODEL:FAMILY"):
        partition_by(["u"], "family")
    # a subject missing a model is an error naming it, not silently dropped
    with pytest.raises(ValueError, match=r"subjects \[2\] lack an evidence"):
        lme_table(ev[~((ev["subject"] == 2) & (ev["model"] == "u"))], "model")


def test_cohort_comparisons_and_files(tmp_path):
    ev = synthetic_evidence()
    res = cohort_bms(ev)
    assert res.models.names == ("u", "tau", "tau_pm")
    assert res.families.names == ("PI", "EI", "UCB")
    assert res.model_families.names == ("u", "tau", "tau_pm")
    # both partitions of the nine pairs share the model-level fit (three models in every family)
    np.testing.assert_allclose(res.families.models.alpha, res.model_families.models.alpha)
    written = write_cohort(res, tmp_path)
    assert {p.name for p in written} == set(FILES.values())
    t = pd.read_csv(tmp_path / FILES["models"])
    assert list(t.columns) == [
        "model",
        "alpha",
        "expected_frequency",
        "exceedance_probability",
        "protected_exceedance_probability",
    ]
    np.testing.assert_allclose(t["alpha"], res.models.alpha, rtol=1e-5)
    summary = json.loads((tmp_path / FILES["summary"]).read_text())
    assert summary["models"]["bor"] == pytest.approx(res.models.bor, rel=1e-12)
    # the written model-level table reads back as BMS input and gives the same answer
    again = read_lme(tmp_path / FILES["lme_models"])
    assert list(again.index) == [str(s) for s in range(1, 7)]
    from ibo_pymc.population.bms import random_effects_bms

    np.testing.assert_allclose(random_effects_bms(again).alpha, res.models.alpha, rtol=1e-6)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_cohort_files_all_or_none(tmp_path, monkeypatch):
    """A failure while the files are written (here: the figure) leaves the folder as it was."""
    import ibo_pymc.population.selection as cohort

    res = cohort_bms(synthetic_evidence())
    write_cohort(res, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    changed = cohort_bms(synthetic_evidence(seed=1))

    def broken(result, labels=None):
        raise RuntimeError("figure failed")

    monkeypatch.setattr(cohort, "figure", broken)
    with pytest.raises(RuntimeError, match="figure failed"):
        write_cohort(changed, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_read_lme(tmp_path):
    p = tmp_path / "lme.csv"
    p.write_text("m1,m2,m3\n-1,-2,-3\n-4,-5,-6\n")
    df = read_lme(p)
    assert list(df.columns) == ["m1", "m2", "m3"] and list(df.index) == ["1", "2"]
    p.write_text("m1,subject,m2\n-1,s9,-2\n-3,s4,-4\n")
    df = read_lme(p)
    assert list(df.index) == ["s9", "s4"] and df.loc["s4", "m2"] == -4
    p.write_text("m1,m2\n-1,x\n")
    with pytest.raises(InputError, match=r"lme.csv:2: field 'm2': expected a log evidence"):
        read_lme(p)
