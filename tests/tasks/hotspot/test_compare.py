"""Model comparison: PSIS-LOO table, held-out lppd, and reuse of saved fits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ibo_pymc.tasks.hotspot.compare import (
    fit_or_load,
    heldout_lppd,
    loo_table,
    reliable_loo,
)
from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
from ibo_pymc.tasks.hotspot.forward.argmax import TABLE_FORMAT, load_tables
from ibo_pymc.tasks.hotspot.loo import (
    ComponentLOO,
    combine,
    component_loo,
    loo_probabilities,
    mixture_loo,
)
from ibo_pymc.tasks.hotspot.model.builder import Component
from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel
from ibo_pymc.tasks.hotspot.model.likelihood import (
    wc_mixture_logp_numpy,
    wc_mixture_random,
)

CFG = {"draws": 150, "tune": 250, "chains": 2, "seed": 4}


def _subject(n, seed, tables):
    """Strongly augmented UCB data: the ũ± model should win."""
    rng = np.random.default_rng(seed)
    d = rng.uniform(-34, 34, n)
    ts = tables.theta_star("UCB", 0.6, d, tau=0.9, tau_neg=1.3)
    x = wc_mixture_random(ts, 0.15, 0.7, rng=rng)
    return SubjectObservations(
        subject=3, user_id=3, session_id=np.arange(1, n + 1), round_index=np.arange(1, n + 1), delta_r1=d, theta2=x
    )


def _part(obs, keep):
    return SubjectObservations(
        subject=obs.subject,
        user_id=obs.user_id,
        session_id=obs.session_id[keep],
        round_index=obs.round_index[keep],
        delta_r1=obs.delta_r1[keep],
        theta2=obs.theta2[keep],
    )


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tables = load_tables()
    obs = _subject(120, 11, tables)
    folder = tmp_path_factory.mktemp("fits")
    train = _part(obs, np.arange(obs.n_rounds) < 96)
    test = _part(obs, np.arange(obs.n_rounds) >= 96)
    fits = {m: fit_or_load(obs, m, folder, config=FitConfig(model=m, **CFG)) for m in ("u", "tau", "tau_pm")}
    trained = fit_or_load(train, "tau_pm", folder, tag="-train", config=FitConfig(model="tau_pm", **CFG))
    return tables, obs, folder, fits, trained, test


def test_loo_table_ranks_the_generating_model_first(fitted):
    import arviz as az

    _, _, _, fits, _, _ = fitted
    t = loo_table({m: f.idata for m, f in fits.items()})
    assert list(t.index) == ["u", "tau", "tau_pm"]
    assert t.loc["tau_pm", "rank"] == 0 and t.loc["tau_pm", "diff_ref"] == 0.0
    assert t.loc["u", "diff_ref"] < -10 and t.loc["u", "se_diff_ref"] > 0
    assert np.isclose(t["weight"].sum(), 1.0)
    direct = az.loo(fits["tau"].idata)
    assert np.isclose(t.loc["tau", "elpd_loo"], float(direct.elpd_loo))


def test_heldout_lppd_is_the_posterior_mean_density(fitted):
    tables, _, _, _, trained, test = fitted
    got = heldout_lppd(trained.idata, test, tables=tables)
    # brute force: every posterior draw's curve from the tables, the numpy mixture density, mean over draws
    post = trained.idata.posterior
    fams = post["family_draw"].attrs["labels"].split(",")
    flat = {v: post[v].values.reshape(-1) for v in post.data_vars if post[v].ndim == 2}
    dens = np.zeros(test.n_rounds)
    for s in range(len(flat["gamma"])):
        f = fams[int(flat["family_draw"][s])]
        ts = tables.theta_star(
            f, flat[get_family(f).var_name][s], test.delta_r1, tau=flat["tau_pos"][s], tau_neg=flat["tau_neg"][s]
        )
        dens += np.exp(wc_mixture_logp_numpy(test.theta2, ts, flat["gamma"][s], flat["w"][s]))
    want = float(np.log(dens / len(flat["gamma"])).sum())
    assert np.isclose(got, want, rtol=1e-6)
    assert heldout_lppd(trained.idata, _part(test, np.zeros(test.n_rounds, bool))) == 0.0


def test_fit_or_load_reuses_only_fits_of_the_same_rounds_and_tables(fitted, monkeypatch):
    _, obs, folder, fits, _, _ = fitted
    path = folder / "subject-03-u.nc"
    assert path.is_file() and fits["u"].table_format == TABLE_FORMAT

    def no_fit(self, **kw):
        raise AssertionError("refitted")

    monkeypatch.setattr(IBOModel, "fit", no_fit)
    again = fit_or_load(obs, "u", folder)
    np.testing.assert_array_equal(again.idata.posterior["gamma"].values, fits["u"].idata.posterior["gamma"].values)

    # a fit made from other rounds, or with tables of another format, is fitted again
    with pytest.raises(AssertionError, match="refitted"):
        fit_or_load(_part(obs, np.arange(obs.n_rounds) < 100), "u", folder)
    stale = IBOModel.load(path)
    for g in stale.idata.groups():
        stale.idata[g].attrs["table_format"] = TABLE_FORMAT - 1
    stale.save(path)
    said = []
    with pytest.raises(AssertionError, match="refitted"):
        fit_or_load(obs, "u", folder, log=said.append)
    assert said and "older argmax tables" in said[0]
    assert json.loads(stale.idata.posterior.attrs["config"])["model"]["model"] == "u"


def test_a_saved_fit_is_refused_for_another_configuration(fitted, monkeypatch):
    from ibo_pymc.errors import InputError

    _, obs, folder, fits, _, _ = fitted
    path = folder / "subject-03-tau.nc"
    same = FitConfig(model="tau", **CFG)
    other = FitConfig(model="tau", **{**CFG, "seed": CFG["seed"] + 1})
    assert fits["tau"].idata.posterior.attrs["config_hash"] == same.key() != other.key()
    assert IBOModel.load(path, config=same).config == same
    with pytest.raises(InputError, match="another configuration.*seed 4 vs 5"):
        IBOModel.load(path, config=other)

    def no_fit(self, **kw):
        raise AssertionError("refitted")

    monkeypatch.setattr(IBOModel, "fit", no_fit)
    assert fit_or_load(obs, "tau", folder, config=same).config == same
    said = []
    with pytest.raises(AssertionError, match="refitted"):
        fit_or_load(obs, "tau", folder, config=other, log=said.append)
    assert "another configuration" in said[0]


def test_reliable_loo_refits_the_rounds_psis_cannot_estimate(fitted):
    _, obs, _, fits, _, _ = fitted
    fit = fits["u"]
    psis = mixture_loo(fit, moment_match=False)
    k = psis.pareto_k.values
    threshold = float(np.sort(k)[-3])  # the two rounds of largest k lie above it
    loo, n_refit = reliable_loo(fit, k_threshold=threshold, moment_match=False)
    bad = np.flatnonzero(k > threshold)
    assert n_refit == len(bad) == 2
    # refitted rounds are exact (k set to 0); the others keep their PSIS values and k
    assert (loo.pareto_k.values[bad] == 0).all() and loo.pareto_k.values.max() <= threshold
    good = np.setdiff1d(np.arange(obs.n_rounds), bad)
    np.testing.assert_array_equal(loo.loo_i.values[good], psis.loo_i.values[good])
    assert np.isclose(float(loo.elpd_loo), loo.loo_i.values.sum())
    assert np.isclose(float(loo.p_loo), float(psis.p_loo + psis.elpd_loo - loo.elpd_loo))
    # a refitted round's value is the held-out lppd of that round under a fit without it
    i = bad[0]
    keep = np.arange(obs.n_rounds) != i
    direct = IBOModel(_part(obs, keep), config=fit.config)
    direct.fit(progress=False)
    assert np.isclose(loo.loo_i.values[i], heldout_lppd(direct.idata, _part(obs, ~keep)), rtol=1e-10)
    # the comparison table says how many rounds were refit and uses the refitted elpd
    t = loo_table({"u": fit}, reference="u")
    full = mixture_loo(fit)
    assert t.loc["u", "n_refit"] == int((full.pareto_k.values > 0.7).sum())
    assert t.loc["u", "max_pareto_k"] <= 0.7


def test_mixture_loo_combines_components_exactly():
    """1 / p(y_i | y_-i) = sum_c P(c | y) / p(y_i | y_-i, c): with plain importance sampling
    on each component, the combination equals plain importance sampling on pooled draws
    holding each component in proportion to P(c | y)."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(0)
    n_draws, rounds = (300, 100), 7
    probs = np.array([0.5, 0.3, 0.2])
    ll = [rng.normal(-2 - c, 1 + 0.5 * c, (*n_draws, rounds)) for c in range(3)]

    def raw_loo(a):  # -log mean_s exp(-ll)
        a = a.reshape(-1, rounds)
        return -(logsumexp(-a, axis=0) - np.log(len(a)))

    def lppd(a):
        a = a.reshape(-1, rounds)
        return logsumexp(a, axis=0) - np.log(len(a))

    parts = [
        ComponentLOO(Component("PI"), np.log(p), raw_loo(a), np.full(rounds, 0.1 * c), lppd(a))
        for c, (p, a) in enumerate(zip(probs, ll))
    ]
    elpd_i, k, lppd_i = combine(parts, relevance=1e-3)
    counts = (probs * 600).astype(int)  # 300, 180, 120 draws of each
    pooled = np.concatenate([a.reshape(-1, rounds)[:n] for a, n in zip(ll, counts)])
    sub = [
        ComponentLOO(
            Component("PI"),
            np.log(p),
            raw_loo(a.reshape(-1, rounds)[:n]),
            np.zeros(rounds),
            lppd(a.reshape(-1, rounds)[:n]),
        )
        for p, a, n in zip(probs, ll, counts)
    ]
    e_sub, _, l_sub = combine(sub, relevance=1e-3)
    np.testing.assert_allclose(e_sub, raw_loo(pooled), rtol=1e-12)
    np.testing.assert_allclose(l_sub, lppd(pooled), rtol=1e-12)
    # leave-one-out component probabilities sum to one; the reported k is the worst relevant one
    share = loo_probabilities(parts)
    np.testing.assert_allclose(share.sum(0), 1.0)
    assert (k == 0.2).all()
    assert (combine(parts, relevance=1.01)[1] == -np.inf).all()
    assert np.all(np.isfinite(elpd_i)) and np.all(lppd_i >= elpd_i)


def test_moment_matching_lowers_k_and_agrees_with_exact_refits(fitted):
    _, obs, _, fits, _, _ = fitted
    fit = fits["u"]
    plain = component_loo(fit, moment_match=False, k_threshold=0.3)
    matched = component_loo(fit, moment_match=True, k_threshold=0.3)
    assert sum(p.n_moment_matched for p in matched) > 0
    for a, b in zip(plain, matched):
        improved = b.pareto_k < a.pareto_k
        assert (b.pareto_k <= a.pareto_k + 1e-12).all()
        assert improved.sum() == b.n_moment_matched
    # where moment matching changed a round's estimate, it agrees with an exact refit
    e_plain, _, _ = combine(plain, 1e-3)
    e_mm, _, _ = combine(matched, 1e-3)
    i = int(np.argmax(np.abs(e_mm - e_plain)))
    keep = np.arange(obs.n_rounds) != i
    direct = IBOModel(_part(obs, keep), config=fit.config)
    direct.fit(progress=False)
    exact = heldout_lppd(direct.idata, _part(obs, ~keep))
    assert abs(e_mm[i] - exact) < 0.1
