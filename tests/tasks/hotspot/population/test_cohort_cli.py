"""``ibo-cohort``: BMS of a table of evidences, and the run on a small cohort (fits, evidences, tables, figure)."""

from __future__ import annotations

import json

import arviz as az
import numpy as np
import pandas as pd
import pytest
from scipy import special

from ibo_pymc.cli.cohort import main
from ibo_pymc.population.selection import FILES

HEADER = ["model", "alpha", "expected_frequency", "exceedance_probability", "protected_exceedance_probability"]


def test_bms_known_answer(tmp_path, capsys):
    """The reference algorithm's answer for this table (tests/population/test_bms.py) through the command line."""
    lme = tmp_path / "lme.csv"
    lme.write_text("subject,m1,m2\n1,0,-1\n2,-0.5,0\n3,0.2,-0.2\n4,1,0\n5,2,-1\n")
    out = tmp_path / "bms.csv"
    assert main(["bms", "--lme", str(lme), "--csv", str(out)]) == 0
    t = pd.read_csv(out)
    assert list(t.columns) == HEADER and list(t["model"]) == ["m1", "m2"]
    np.testing.assert_allclose(t["alpha"], [5.4438, 1.5562], atol=1e-3)  # converged past SPM's 1e-3 stopping rule
    np.testing.assert_allclose(t["exceedance_probability"], [0.94738, 0.05262], atol=2e-4)
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["bor"] == pytest.approx(0.51741, abs=1e-4) and side["n_subjects"] == 5
    np.testing.assert_allclose(
        t["protected_exceedance_probability"],
        (1 - side["bor"]) * t["exceedance_probability"] + side["bor"] / 2,
        rtol=1e-8,
    )
    printed = capsys.readouterr().out
    assert "Bayesian omnibus risk (BOR) 0.517" in printed


def test_bms_families_and_sampling(tmp_path, capsys):
    rng = np.random.default_rng(2)
    lme = tmp_path / "lme.csv"
    pd.DataFrame(rng.normal(0, 3, (12, 4)), columns=["a", "b", "c", "d"]).to_csv(lme, index=False)
    out = tmp_path / "fam.csv"
    assert main(["bms", "--lme", str(lme), "--csv", str(out), "--families", "AB=a,b;CD=c,d"]) == 0
    t = pd.read_csv(out)
    assert list(t["model"]) == ["AB", "CD"] and t["expected_frequency"].sum() == pytest.approx(1)
    out3 = tmp_path / "three.csv"
    args = [
        "bms",
        "--lme",
        str(lme),
        "--csv",
        str(out3),
        "--exceedance",
        "sampling",
        "--samples",
        "20000",
        "--seed",
        "5",
    ]
    assert main(args) == 0
    first = out3.read_bytes()
    assert main(args) == 0
    assert out3.read_bytes() == first  # seeded
    assert "Monte Carlo (20000" in json.loads(out3.with_suffix(".json").read_text())["exceedance_method"]


def test_run_small_cohort(valid_raw, tmp_path):
    """One subject of the corpus cohort: three fits, their evidences in the attrs and the tables; a rerun reuses
    them."""
    out, fits = tmp_path / "out", tmp_path / "fits"
    argv = [
        "run",
        "--data",
        str(valid_raw),
        "--out",
        str(out),
        "--fits",
        str(fits),
        "--subject",
        "1",
        "--draws",
        "100",
        "--tune",
        "300",
        "--chains",
        "2",
        "--workers",
        "1",
        "--quiet",
    ]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir()} == set(FILES.values())
    ev = pd.read_csv(out / FILES["evidence"])
    assert len(ev) == 3 * 4 and set(ev["method"]) == {"bridge"}
    for model in ("u", "tau", "tau_pm"):
        idata = az.from_netcdf(fits / f"subject-01-{model}.nc")
        rows = ev[ev["model"] == model].set_index("family")
        assert idata.posterior.attrs["log_evidence"] == pytest.approx(rows.loc["all", "log_evidence"], abs=1e-6)
        assert idata.posterior.attrs["log_evidence_error"] == pytest.approx(rows.loc["all", "error"], abs=1e-6)
        fam = rows.drop("all")["log_evidence"]
        assert rows.loc["all", "log_evidence"] == pytest.approx(special.logsumexp(fam) - np.log(3), abs=1e-6)
        np.testing.assert_allclose(
            fam.loc[list(idata.component_evidence["family"].values)],
            idata.component_evidence["family_log_evidence"].values,
            atol=1e-6,
        )
    t = pd.read_csv(out / FILES["models"])
    assert list(t.columns) == HEADER and list(t["model"]) == ["u", "tau", "tau_pm"]
    stamps = {p.name: p.stat().st_mtime_ns for p in fits.glob("*.nc")}
    tables = (out / FILES["models"]).read_bytes()
    assert main(argv) == 0
    assert {p.name: p.stat().st_mtime_ns for p in fits.glob("*.nc")} == stamps  # reused, not refitted
    assert (out / FILES["models"]).read_bytes() == tables


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["run", "--out", "x", "--subject", "-1"], "--subject"),
        (["run", "--out", "x", "--subject", "1,a"], "--subject"),
        (["bms", "--lme", "x.csv"], "--csv"),
    ],
)
def test_usage_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err
