"""The hotspot task's side of the engine's hierarchical model: the switch on IBOModel, strata and held-out scoring."""

from __future__ import annotations

import numpy as np
import pytest

from ibo_pymc.engine import hierarchical as H
from ibo_pymc.tasks.hotspot.model.fit import IBOModel
from tests.tasks.hotspot.model.test_model import synthetic


def test_the_switch():
    obs = [synthetic(30, seed=s) for s in (1, 2)]
    h = IBOModel(obs, hierarchical=True, draws=200, seed=3, population_draws=300)
    assert isinstance(h, H.HierarchicalModel)
    assert h.config.model == "tau_pm" and h.config.draws == 200 and h.config.seed == 3 and h.idata is None
    assert h.settings["draws"] == 300
    assert all(isinstance(m, IBOModel) for m in h.models)
    assert isinstance(IBOModel(obs[0], "u"), IBOModel)  # without the switch: the single-subject model
    with pytest.raises(ValueError, match="at least two subjects"):
        IBOModel(obs[:1], hierarchical=True)


def test_subject_draws_and_held_out_scoring():
    """A fitted subject's draws as the population sees them (the uniform priors' logit, the shape parameter
    per family), and the shrunken posterior in the layout that held-out scoring reads."""
    import dataclasses

    from ibo_pymc.tasks.hotspot.compare import heldout_lppd

    fits = []
    for s in (1, 2):
        obs = dataclasses.replace(synthetic(30, seed=s), subject=s)
        m = IBOModel(obs, "tau", draws=200, tune=200, chains=2, seed=s)
        m.fit(progress=False)
        fits.append(m)
    d = fits[0].subject_draws(100)
    assert d.columns == ("param", "gamma", "w", "tau") and d.model == "tau"
    assert [p[0] for p in d.shape_priors] == ["xi_pi", "xi_ei", "p_ucb"]
    k = d.component_family[0]
    xi = fits[0].priors(d.families[k])[d.shape_priors[k][0]].from_unconstrained(d.z[0, :, 0])
    lo, hi = d.shape_priors[k][1].bounds
    assert ((xi > lo) & (xi < hi)).all()
    # the refinement's likelihood hook: the compiled per-draw kernel at the draws as the population sees them
    from ibo_pymc.tasks.hotspot.model.builder import whole_families

    p = fits[0].parameters
    comp = next(c for c in whole_families(fits[0].families) if c.family == d.families[k])
    ref = p.loglik(fits[0].sd, comp.family, p.from_unconstrained(comp, d.z[0]), summed=True)
    got = d.loglik(k, d.z[0])
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    assert np.isfinite(got).all() and np.ptp(got) > 0
    # the layout, not the refinement (tests/engine/test_proposal.py), so one population fit
    h = H.fit_hierarchical(fits, draws=100, tune=100, chains=2, seed=1, cores=1, n_draws=100, refine=False)
    one = h.subject_idata(1)
    assert {"xi_pi", "xi_ei", "p_ucb", "gamma", "w", "tau"} <= set(one.posterior.data_vars)
    assert np.isfinite(heldout_lppd(one, synthetic(20, seed=9)))
    with pytest.raises(ValueError, match="one model"):
        H.fit_hierarchical([fits[0], _other_model(fits[1])])


def _other_model(fit):
    m = IBOModel(fit.obs, "u", draws=100, tune=100, chains=2, seed=1)
    m.fit(progress=False)
    return m
