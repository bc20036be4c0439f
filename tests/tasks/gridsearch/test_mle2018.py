"""Wu et al. (2018)'s maximum-likelihood protocol by the tabulated search (:mod:`.mle_tabulated`; issue 32,
item 3), checked against the authors' saved folds of participant 1 (``tests/reference/gridsearch2018``): in
every fold of the 13 saved models that are not PMU, our training optimum is at least as good as theirs (their
parameters scored by our likelihood, which gives their held-out nLL to 1e-7: test_families.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18
from ibo_pymc.tasks.gridsearch.choice import REGISTRY, choice_loglik, choice_loglik_table
from ibo_pymc.tasks.gridsearch.likelihood import posterior
from ibo_pymc.tasks.gridsearch.mle_tabulated import _objective, _Rounds, cross_validate, fit_participant, has_beta
from ibo_pymc.tasks.gridsearch.protocols import protocol

REF = Path(__file__).parents[2] / "reference" / "gridsearch2018" / "folds_participant1.csv"
#: ours may be worse than theirs by this much: the published objective is discontinuous where a clamp switches on
#: (a value crossing 0 jumps to 1e-4), and the published search can end on the low side of such a jump, a few 1e-5
#: nats below the continuous optimum beside it (2d RBFGM of participant 1, horizon 40, fold 4: 1.6e-6; 1d LRBFUCB
#: of participant 63, horizon 10, fold 6: 3.2e-5), where no local search leads
EDGE = 1e-4


@pytest.fixture(scope="module")
def table(gridsearch2018_folder):
    return g18.load_gridsearch2018(gridsearch2018_folder, progress=False)


def test_the_table_is_the_likelihood(table):
    """choice_loglik_table at every (beta, tau) of a grid equals choice_loglik there, for every family (PMU on the
    line only, for time) under both 2018 rules."""
    worst = 0.0
    for exp, rule in (("1d", "wu2018-line"), ("2d", "wu2018")):
        gr = g18.grid_rounds(table, 3, exp)
        idx = np.flatnonzero(gr.round_lengths == gr.round_lengths.max())[:2]
        n = gr.round_lengths[idx[0]]
        ch, y = gr.choices[idx, :n], gr.y[idx, :n]
        post = posterior(ch, y, "GP", 1.3, published=rule, options=gr.options)
        for fam in REGISTRY:
            if fam.endswith("PMU") and exp == "2d":
                continue
            betas, taus = np.array([0.01, 0.7, 30.0]), np.array([0.003, 0.05, 2.0])
            t = choice_loglik_table(post, ch, y, fam, betas, taus, published=rule, options=gr.options)
            for i, b in enumerate(betas):
                for j, tau in enumerate(taus):
                    ll, _ = choice_loglik(post, ch, y, fam, b, tau, published=rule, options=gr.options)
                    worst = max(worst, float(np.abs(t[i, j] - ll).max()))
    assert worst < 1e-10


def test_training_optima_at_least_the_published(table):
    ref = pd.read_csv(REF)
    worst = -math.inf
    for exp, saved in ref.groupby("experiment"):
        proto = protocol(f"wu2018-{exp}")
        gr = g18.grid_rounds(table, 1, exp)
        folds = {(f.horizon, f.index): f for f in proto.folds(gr)}
        for name, rows in saved.groupby("model"):
            m = proto.model(name)
            ours = {(f.horizon, f.index): f for f in cross_validate(gr, m, proto)}
            for row in rows.itertuples(index=False):
                fold = folds[(row.horizon, row.leaveoutindex)]
                rounds = _Rounds(gr, sorted({fold.test, *fold.train}))
                where = {int(p): i for i, p in enumerate(rounds.positions)}
                tr = [where[p] for p in fold.train]
                f = _objective(
                    rounds.choices[tr],
                    rounds.y[tr],
                    m.surrogate,
                    m.family,
                    proto.rule,
                    rounds.options,
                    has_beta(m.family),
                )
                theirs = f(np.array([p for p in (row.par1, row.par2, row.par3) if np.isfinite(p)]))[0]
                gap = ours[(row.horizon, row.leaveoutindex)].train_nll - theirs
                worst = max(worst, gap)
                assert gap <= EDGE, (exp, name, row.horizon, row.leaveoutindex, gap)
    assert worst > -1.0  # the same optima, found: not a vacuous comparison


def test_a_participants_rows(table):
    """fit_participant on the line: the chance models (PMU) score every choice 1/30 with no parameters; a
    fitted model's nLL is its folds' held-out sum, R2 = 1 - nLL / (120 ln 30), the parameters the folds'
    medians."""
    gr = g18.grid_rounds(table, 2, "1d")
    rows, folds = fit_participant(gr, "wu2018-1d", ("RBFPMU", "RBFGM", "LBMTUCB"))
    rows, folds = pd.DataFrame(rows), pd.DataFrame(folds)
    assert len(rows) == 3 and len(folds) == 3 * 16
    pmu = rows.set_index("model").loc["RBFPMU"]
    assert pmu["R2"] == pytest.approx(0.0, abs=1e-12) and np.isnan(pmu["lambda"]) and np.isnan(pmu["tau"])
    for name, f in folds.groupby("model"):
        row = rows.set_index("model").loc[name]
        assert row["nLL"] == pytest.approx(f["test_nLL"].sum())
        assert row["R2"] == pytest.approx(1 - row["nLL"] / (120 * math.log(30)))
        if name != "RBFPMU":
            assert row["tau"] == pytest.approx(f["tau"].median()) and (f["train_nLL"] < 7 * 10 * math.log(30)).all()
    lb = rows.set_index("model").loc["LBMTUCB"]
    assert np.isnan(lb["lambda"]) and lb["error_variance"] > 0 and lb["beta"] > 0
