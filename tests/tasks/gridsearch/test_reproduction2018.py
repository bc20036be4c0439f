"""The committed reproduction of Wu et al. (2018)'s published protocol (``models/gridsearch/wu2018/EXPERIMENT/
reproduction``: ``ibo-reproduce --task gridsearch --experiment 1d|2d``) against the authors' saved results
(extracts in ``tests/reference/gridsearch2018``, see its README):

- per fold, of participant 1 and eight more per experiment (three of them added after the reproduction was
  made): at the authors' parameters our likelihood gives their held-out nLL, and our committed training optimum
  is at least as good as theirs (up to the clamps' discontinuities, :data:`EDGE`); PMU on the grid only within
  the authors' sampling noise (their estimate draws afresh at every evaluation);
- per model: the mean pseudo-R2 over participants equals theirs (``modelFit.csv``) to 2 decimals, except where
  their search missed optima that ours finds (:data:`SEARCH_MISSED`): there ours is higher.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ibo_pymc.tasks.gridsearch import gridsearch2018 as g18
from ibo_pymc.tasks.gridsearch.mle_tabulated import _objective, _Rounds, fit_participant, has_beta
from ibo_pymc.tasks.gridsearch.protocols import protocol
from tests.tasks.gridsearch.committed import assert_same_rows

REPO = Path(__file__).parents[3]
REF = REPO / "tests" / "reference" / "gridsearch2018"
RESULTS = REPO / "models" / "gridsearch" / "wu2018"
#: as in test_mle2018.py: the published objective's discontinuities where a clamp switches on
EDGE = 1e-4
#: the authors' PMU on the grid is a fresh Monte Carlo estimate at every evaluation; ours uses fixed draws
PMU_NOISE = 6.0
#: where the choice rule is an argmax (tau at the box's lower end, beta large) the published objective is piecewise
#: constant in the parameters, with slivers where a decision's chosen option ties with its best competitor: the
#: saved optimum of participant 80's BMT-UCB on the grid (horizon 40, fold 3) lies on one 0.003 wide in log error
#: variance, 0.15 nats below the plateau beside it, which no local search reaches (the published search, many
#: random points, landed on it). A saved optimum better than ours must be such a sliver: within SLIVER of it on
#: one axis a point is worse than ours (test_folds_against_the_saved)
SLIVER = 0.005
#: models whose published mean pseudo-R2 is lower than the protocol's because the published search (differential
#: evolution) missed the training optimum in many folds: the line's LRBFGV, whose optimum is often the box's
#: corner (the longest length-scale, the smallest tau), e.g. participant 61 in 12 of 16 folds, by 3.6 to 16 nats
#: (test_the_published_search_missed_a_corner)
SEARCH_MISSED = {("1d", "LRBFGV")}
#: models whose published mean pseudo-R2 differs because the published search stopped at an interior optimum where
#: ours found a better one of the same training rounds that predicts the held-out round worse: the grid's LRBFPOI,
#: participant 42, horizon 20, fold 2 (ours in the argmax regime, 1.18 nats better in training, 86.6 worse held
#: out: the whole difference of that participant's held-out sum; test_a_better_training_optimum_predicts_worse)
BETTER_TRAINING = {("2d", "LRBFPOI")}
#: models whose published results come from a Monte Carlo estimate drawn afresh at every evaluation (PMU on the
#: grid): the published search optimised a noisy objective, and ours (fixed draws) predicts the held-out rounds
#: better, in most participants
PMU_ESTIMATE = {("2d", "RBFPMU"), ("2d", "BMTPMU")}


def _results(experiment: str, name: str) -> pd.DataFrame:
    path = RESULTS / experiment / "reproduction" / f"{name}.csv"
    if not path.is_file():
        pytest.skip(f"{path} is not committed yet")
    return pd.read_csv(path)


@pytest.fixture(scope="module")
def table(gridsearch2018_folder):
    return g18.load_gridsearch2018(gridsearch2018_folder, progress=False)


@pytest.fixture(scope="module")
def saved():
    return pd.concat([pd.read_csv(REF / "folds_participant1.csv"), pd.read_csv(REF / "folds_more.csv")])


@pytest.mark.parametrize("experiment", ["1d", "2d"])
def test_folds_against_the_saved(experiment, table, saved):
    ours = _results(experiment, "folds").set_index(["participant", "model", "horizon", "fold"])
    proto = protocol(f"wu2018-{experiment}")
    held_out, gaps, n, slivers = [], [], 0, []
    for pid, rows in saved[saved["experiment"] == experiment].groupby("participant"):
        gr = g18.grid_rounds(table, pid, experiment)
        folds = {(f.horizon, f.index): f for f in proto.folds(gr)}
        for row in rows.itertuples(index=False):
            m = proto.model(row.model)
            if row.model in proto.chance:
                continue
            fold = folds[(row.horizon, row.leaveoutindex)]
            rounds = _Rounds(gr, sorted({fold.test, *fold.train}))
            where = {int(p): i for i, p in enumerate(rounds.positions)}
            tr, te = [where[p] for p in fold.train], where[fold.test]
            u = np.array([p for p in (row.par1, row.par2, row.par3) if np.isfinite(p)])
            args = (m.surrogate, m.family, proto.rule, rounds.options, has_beta(m.family))
            f = _objective(rounds.choices[tr], rounds.y[tr], *args)
            train = f.value(u)  # the values alone: no gradient is needed here
            test = _objective(rounds.choices[te : te + 1], rounds.y[te : te + 1], *args).value(u)
            gap = ours.loc[(pid, row.model, row.horizon, row.leaveoutindex), "train_nLL"] - train
            if m.family.endswith("PMU") and experiment == "2d":
                assert abs(test - row.nLL) < PMU_NOISE and gap < PMU_NOISE, (pid, row.model, row.horizon)
                continue
            held_out.append(abs(test - row.nLL))
            gaps.append(gap)
            n += 1
            if gap > EDGE:  # only on a sliver (SLIVER): a neighbour of the saved point is worse than ours
                where_ = (pid, row.model, row.horizon, row.leaveoutindex, gap)
                near = [f.value(u + d * np.eye(len(u))[k]) for k in range(len(u)) for d in (-SLIVER, SLIVER)]
                assert max(near) > train + gap, where_
                slivers.append(where_)
    # the held-out nLL at their parameters is theirs to 1e-6 in every fold but one: participant 63's GP-GM on the
    # grid, horizon 40, fold 2, 5.8e-4 nats (not yet traced; the size of one value crossing the grid rule's
    # threshold at 0, where it jumps to 1e-4, at their tau 0.16)
    assert sum(d > 1e-6 for d in held_out) <= 1 and max(held_out) < 1e-3, max(held_out)
    assert n > 800 and len(slivers) <= 1, slivers
    assert np.mean(np.array(gaps) < -1e-3) < 0.5  # mostly the same optima: the comparison is not vacuous


@pytest.mark.parametrize("experiment", ["1d", "2d"])
def test_mean_pseudo_r2_per_model_as_published(experiment):
    ours = _results(experiment, "fits").groupby("model")["R2"].mean()
    theirs = pd.read_csv(REF / f"modelFit_{experiment.upper()}.csv").groupby("model")["R2"].mean()
    assert set(ours.index) == set(theirs.index) and len(ours) == 24
    differ = {
        m: (round(ours[m], 4), round(theirs[m], 4))
        for m in ours.index
        if round(ours[m], 2) != round(theirs[m], 2)
        and (experiment, m) not in SEARCH_MISSED | BETTER_TRAINING | PMU_ESTIMATE
    }
    assert not differ, differ
    for exp, m in BETTER_TRAINING:
        if exp == experiment:
            assert 0 < theirs[m] - ours[m] < 0.002, (m, ours[m], theirs[m])
    for exp, m in PMU_ESTIMATE:
        if exp == experiment:
            assert 0 < ours[m] - theirs[m] < 0.02, (m, ours[m], theirs[m])
    for exp, m in SEARCH_MISSED:
        if exp == experiment:
            assert 0 < ours[m] - theirs[m] < 0.01, (m, ours[m], theirs[m])


def test_the_published_search_missed_a_corner(table):
    """Participant 61's LRBFGV on the line (``analysis1D/modelResults/final/LRBFGV61.csv``): in these folds the
    saved optimum is an interior point, and the committed optimum the box's corner (log lambda 4, log tau -5),
    better on the training rounds by more than 3 nats; their held-out sum is 28 nats worse than ours."""
    saved = [(5, 2, -1.66026420467031, -0.530418226818443), (10, 1, -1.75037300304899, -0.301269012487713)]
    ours = _results("1d", "folds").set_index(["participant", "model", "horizon", "fold"])
    proto = protocol("wu2018-1d")
    gr = g18.grid_rounds(table, 61, "1d")
    m = proto.model("LRBFGV")
    for h, k, *u in saved:
        fold = next(f for f in proto.folds(gr) if (f.horizon, f.index) == (h, k))
        rounds = _Rounds(gr, sorted({fold.test, *fold.train}))
        where = {int(p): i for i, p in enumerate(rounds.positions)}
        tr = [where[p] for p in fold.train]
        theirs = _objective(rounds.choices[tr], rounds.y[tr], m.surrogate, m.family, proto.rule, rounds.options, False)
        row = ours.loc[(61, "LRBFGV", h, k)]
        assert theirs(np.array(u))[0] - row["train_nLL"] > 3.0
        assert np.log(row["theta"]) == pytest.approx(4.0, abs=1e-6) and np.log(row["tau"]) < -4.9


def _fold_objectives(table, experiment, participant, model, horizon, index):
    """``(training nLL, held-out nLL)`` as functions of the log parameters, for one fold of one model."""
    proto = protocol(f"wu2018-{experiment}")
    gr = g18.grid_rounds(table, participant, experiment)
    m = proto.model(model)
    fold = next(f for f in proto.folds(gr) if (f.horizon, f.index) == (horizon, index))
    rounds = _Rounds(gr, sorted({fold.test, *fold.train}))
    where = {int(p): i for i, p in enumerate(rounds.positions)}
    tr, te = [where[p] for p in fold.train], where[fold.test]
    args = (m.surrogate, m.family, proto.rule, rounds.options, has_beta(m.family))
    train = _objective(rounds.choices[tr], rounds.y[tr], *args)
    test = _objective(rounds.choices[te : te + 1], rounds.y[te : te + 1], *args)
    return (lambda u: train(u)[0]), (lambda u: test(u)[0])


def test_a_saved_optimum_on_a_sliver(table):
    """Participant 80's BMT-UCB on the grid, horizon 40, fold 3 (``analysis2D/modelResults/final/BMTUCB80.csv``,
    in ``folds_more.csv``): the saved optimum (log error variance 0.576, log beta 4.67, log tau -4.88: the choice
    rule an argmax) is 0.15 nats below the plateau half a hundredth of a log unit away on one side, and 6.5 nats
    above the plateau on the other (:data:`SLIVER`)."""
    f, _ = _fold_objectives(table, "2d", 80, "BMTUCB", 40, 3)
    u = np.array([0.576102991825359, 4.67417090162831, -4.88349450060144])
    at, right, left = (f(u + np.array([d, 0.0, 0.0])) for d in (0.0, SLIVER, -SLIVER))
    assert 0.1 < right - at < 0.2 and left - at > 5.0


def test_a_better_training_optimum_predicts_worse(table):
    """Participant 42's local PI on the grid, horizon 20, fold 2: the committed optimum (tau at the box's lower end:
    the choice rule an argmax) is better on the training rounds than the interior optimum the other folds share,
    and worse on the held-out round by the whole difference between our held-out sum and the authors'
    (``modelFit_2D.csv``): theirs is the interior one."""
    from scipy import optimize

    ours = _results("2d", "folds").set_index(["participant", "model", "horizon", "fold"]).loc[(42, "LRBFPOI", 20, 2)]
    f, g = _fold_objectives(table, "2d", 42, "LRBFPOI", 20, 2)
    r = optimize.minimize(lambda u: f(np.clip(u, -5, 5)), np.array([0.5, -2.4]), method="Nelder-Mead")
    interior_test = g(r.x)
    assert r.fun - ours["train_nLL"] > 1.0 and np.log(ours["tau"]) < -4.99
    theirs = pd.read_csv(REF / "modelFit_2D.csv").query("participant == 42 and model == 'LRBFPOI'")["nLL"].iloc[0]
    mine = _results("2d", "fits").query("participant == 42 and model == 'LRBFPOI'")["nLL"].iloc[0]
    assert ours["test_nLL"] - interior_test == pytest.approx(mine - theirs, abs=0.01)


@pytest.mark.parametrize(
    "experiment, participant, models",
    [("1d", 70, ("LRBFPOI", "BMTGM", "LBMTUCB")), ("2d", 2, ("RBFEXI", "LBMTPMU"))],
    ids=["1d", "2d"],
)
def test_committed_reproduction_is_this_code(table, experiment, participant, models):
    """The committed reproduction comes from this code: the protocol rerun for one participant and a few models
    (a snapped family, a UCB, a PMU) gives their rows of ``folds.csv`` and ``fits.csv``, each number to the
    tolerance its kind allows across NumPy/SciPy builds (:func:`.committed.assert_same_rows`)."""
    _same_as_committed(table, experiment, participant, models)


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["1d", "2d"])
@pytest.mark.parametrize("participant", [12, 14, 23])
def test_committed_reproduction_where_flat_optima_drift(table, experiment, participant):
    """Wider than the check above, over the models whose training optima are flattest (the mean tracker's UCB
    at the box's edge, and the GP's UCB): a NumPy / SciPy update moved 5 of these three participants' folds to
    other points of a flat optimum before the tables were regenerated (2026-11-29), which the one-participant
    check did not see."""
    _same_as_committed(table, experiment, participant, ("BMTUCB", "LBMTUCB", "RBFUCB", "LRBFUCB"))


def _same_as_committed(table, experiment, participant, models):
    rows, folds = fit_participant(g18.grid_rounds(table, participant, experiment), f"wu2018-{experiment}", models)
    keys = {"fits": ["participant", "model"], "folds": ["participant", "model", "horizon", "fold"]}
    for name, ours in (("fits", pd.DataFrame(rows)), ("folds", pd.DataFrame(folds))):
        committed = _results(experiment, name)
        committed = committed[(committed.participant == participant) & committed.model.isin(models)]
        committed = committed.sort_values(keys[name]).reset_index(drop=True)
        ours = ours.sort_values(keys[name]).reset_index(drop=True)[committed.columns]
        assert_same_rows(ours, committed)
