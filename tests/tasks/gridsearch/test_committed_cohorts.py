"""The committed grid-search cohorts' model selection is what the package computes from their own log evidences:
each surrogate's evidence the mean of its families' (equal prior shares), the long and wide tables the same
numbers, the BMS tables from those evidences, and the family probabilities of the committed convergence tables
(``bayes/summary.csv``, from the saved fits) the same evidences' shares. A table edited by hand, or a cohort
and a convergence table made from different fits, fails here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from ibo_pymc.population.bms import family_bms, random_effects_bms

MODELS = Path(__file__).resolve().parents[3] / "models" / "gridsearch"
COHORTS = sorted(p.parent for p in MODELS.rglob("cohort/**/bms_models.csv"))


def _read(folder, name):
    return pd.read_csv(folder / name, index_col=0)


def test_the_committed_cohorts_are_found():
    names = {str(p.relative_to(MODELS)) for p in COHORTS}
    assert {"cohort/spatial", "cohort/conceptual", "wu2018/1d/cohort", "wu2018/2d/cohort"} <= names


@pytest.mark.parametrize("folder", COHORTS, ids=lambda p: str(p.relative_to(MODELS)))
def test_a_cohorts_model_selection_follows_from_its_log_evidences(folder):
    lm, lf = _read(folder, "lme_models.csv"), _read(folder, "lme_families.csv")
    assert list(lm.index) == list(lf.index) and lm.notna().all().all()
    for model in lm.columns:
        cols = [c for c in lf.columns if c.split(":")[0] == model]
        assert cols, model
        np.testing.assert_allclose(
            logsumexp(lf[cols].to_numpy(), axis=1) - np.log(len(cols)), lm[model].to_numpy(), rtol=0, atol=1e-5
        )
    long = pd.read_csv(folder / "log_evidence.csv")  # the same numbers, one row per (subject, model, family|all)
    fam = long[long["family"] != "all"].pivot(index="subject", columns=["model", "family"], values="log_evidence")
    fam.columns = [f"{m}:{f}" for m, f in fam.columns]
    np.testing.assert_allclose(fam.loc[lf.index, lf.columns], lf, rtol=0, atol=1e-5)
    tot = long[long["family"] == "all"].pivot(index="subject", columns="model", values="log_evidence")
    np.testing.assert_allclose(tot.loc[lm.index, lm.columns], lm, rtol=0, atol=1e-5)
    models = _read(folder, "bms_models.csv")
    np.testing.assert_allclose(random_effects_bms(lm).alpha, models.loc[list(lm.columns), "alpha"], rtol=2e-5)
    families = _read(folder, "bms_families.csv")
    partition = {f: [c for c in lf.columns if c.split(":")[1] == f] for f in families.index}
    np.testing.assert_allclose(family_bms(lf, partition).alpha, families["alpha"], rtol=2e-5)


def _summary(folder):
    """The convergence table of a cohort's fits: ``wu2018/EXPERIMENT/bayes`` beside ``wu2018/EXPERIMENT/cohort``;
    the 2020 study's ``bayes/summary.csv`` (its GP fits) for ``cohort/CONTEXT``."""
    if folder.parent.name == "cohort":
        table = pd.read_csv(MODELS / "bayes" / "summary.csv")
        return table[table["context"] == folder.name]
    return pd.read_csv(folder.parent / "bayes" / "summary.csv")


#: cohorts whose convergence table comes from other fits: the 2020 study's bayes/summary.csv was regenerated
#: from the GP fits with the interpolated posterior (7dee1c8), its cohort (0b4cef1) is from the exact-posterior
#: fits; family probabilities differ by up to 0.011. Strict: regenerating the cohort from the same fits passes.
OTHER_FITS = {"cohort/spatial", "cohort/conceptual"}


@pytest.mark.parametrize(
    "folder",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="made from other fits (OTHER_FITS)"))
        if str(p.relative_to(MODELS)) in OTHER_FITS
        else p
        for p in COHORTS
    ],
    ids=lambda p: str(p.relative_to(MODELS)),
)
def test_the_convergence_tables_family_probabilities_are_the_cohorts_evidences(folder):
    lf = _read(folder, "lme_families.csv")
    summary = _summary(folder)
    assert len(summary) > 0
    for row in summary.itertuples(index=False):
        cols = [c for c in lf.columns if c.split(":")[0] == row.surrogate]
        v = lf.loc[row.participant, cols].to_numpy(float)
        share = np.exp(v - logsumexp(v))
        got = np.array([getattr(row, f"p_{c.split(':')[1]}") for c in cols], float)
        np.testing.assert_allclose(got, share, rtol=1e-4, atol=1e-6, err_msg=f"{row.participant} {row.surrogate}")
