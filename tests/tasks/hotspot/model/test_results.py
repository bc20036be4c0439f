"""A fit's per-component results are InferenceData variables (group ``component_evidence``, dim ``component``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ibo_pymc.engine.results import (
    component_table,
    family_probability,
    family_table,
)
from ibo_pymc.engine.schema import FORMAT


@pytest.fixture(scope="module")
def fit(tmp_path_factory):
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel
    from ibo_pymc.tasks.hotspot.simulate.moves import Truth, simulate_moves

    obs = simulate_moves(Truth("UCB", 0.8, gamma=0.2, w=0.6, tau_pos=0.3), 60, 3, tables=load_tables())
    m = IBOModel(obs, "tau", draws=150, tune=200, chains=2, seed=1)
    m.fit(progress=False)
    path = m.save(tmp_path_factory.mktemp("fit") / "f.nc")
    return m, IBOModel.load(path)


def test_component_evidence_is_a_group_with_dim_component(fit):
    m, loaded = fit
    ds = loaded.idata["component_evidence"]
    assert ds["log_evidence"].dims == ("component",) and ds["family_probability"].dims == ("family",)
    a = loaded.idata.posterior.attrs
    assert (int(a["ibo_pymc_format"]), a["task"], a["observed"]) == (FORMAT, "hotspot", "theta2")  # the one fit schema
    assert "component_probability" not in loaded.idata.posterior.attrs  # no JSON copies of the results
    t = component_table(loaded.idata)
    assert list(t.index) == list(ds["component"].values) and np.isclose(t["probability"].sum(), 1.0)
    f = family_table(loaded.idata)
    np.testing.assert_allclose(f["probability"].sum(), 1.0)
    # a family's evidence is the log-sum of its components'
    for fam, row in f.iterrows():
        lev = t.loc[t["family"] == fam, "log_evidence"].to_numpy()
        assert row["log_evidence"] == pytest.approx(np.log(np.exp(lev - lev.max()).sum()) + lev.max())
    assert family_probability(loaded.idata) == pytest.approx(family_probability(m.idata))


def test_fits_saved_in_format_2_read_the_same(fit):
    """Format-2 files held the same numbers as JSON attrs; the readers accept both."""
    _, loaded = fit
    idata = loaded.idata.copy()
    t, f = component_table(idata), family_table(idata)
    del idata["component_evidence"]
    idata.posterior.attrs.update(
        {
            "component_log_evidence": json.dumps(t["log_evidence"].to_dict()),
            "component_log_evidence_rel_error": json.dumps(t["log_evidence_rel_error"].to_dict()),
            "component_probability": json.dumps(t["probability"].to_dict()),
            "conditional_diagnostics": json.dumps(
                {k: {c: float(r[c]) for c in ("r_hat", "ess_bulk", "ess_tail")} for k, r in t.iterrows()}
            ),
            "family_log_evidence": json.dumps(f["log_evidence"].to_dict()),
            "family_probability": json.dumps(f["probability"].to_dict()),
        }
    )
    assert "component_evidence" not in idata.groups()
    np.testing.assert_allclose(
        component_table(idata)[["log_evidence", "probability", "r_hat"]].to_numpy(),
        t[["log_evidence", "probability", "r_hat"]].to_numpy(),
    )
    assert family_probability(idata) == pytest.approx(family_probability(loaded.idata))


def test_a_constant_quantity_is_diagnosed_without_a_warning(fit):
    """A posterior quantity that is constant within its chains (a family probability of exactly 0, as for some
    subjects under u) has no R-hat (0/0): it is reported as 1, it cannot disagree, and NumPy's 'invalid value'
    warning is not printed (issue 31, item 6)."""
    import warnings

    from ibo_pymc.tasks.hotspot.model.diagnostics import diagnostics

    _, loaded = fit
    idata = loaded.idata.copy()
    fp = idata.posterior["family_prob"]
    idata.posterior["family_prob"] = fp.copy(data=np.where(fp["family"] == fp["family"][1], 0.0, fp.values))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        diag = diagnostics(idata)
    assert diag.loc[f"family_prob[{str(fp['family'].values[1])}]", "r_hat"] == 1.0
