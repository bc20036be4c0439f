"""The engine's loop (:func:`ibo_pymc.engine.fitting.fit_components`): how far a failing component is thinned."""

import math

import pytest

from ibo_pymc.engine.config import EngineConfig
from ibo_pymc.engine.fitting import ComponentFit, SamplingPlan, fit_components, next_thin, thinning_factor


class ScriptedPlan(SamplingPlan):
    """Two families whose ESS grows in proportion to ``thin`` (``ess_per_thin`` each); records every pass."""

    def __init__(self, ess_per_thin, joint=False):
        self.ess_per_thin, self.joint, self.passes = ess_per_thin, joint, []

    def components(self):
        return list(self.ess_per_thin)

    def sample(self, comps, todo, thin):
        self.passes.append({comps[i]: thin[i] for i in todo})
        return {
            i: ComponentFit(
                comps[i],
                comps[i],
                comps[i],
                (),
                None,
                None,
                thin[i],
                r_hat=1.0,
                ess_bulk=self.ess_per_thin[comps[i]] * thin[i],
                ess_tail=self.ess_per_thin[comps[i]] * thin[i] + 50,
            )
            for i in todo
        }

    def evidences(self, comps, fits, todo):
        for i in todo:
            fits[i].log_evidence = 0.0


@pytest.mark.parametrize(
    "ess, expected",
    [(390, 2), (150, 4), (100, 4), (99, 8), (10, 8), (0, 2), (math.nan, 2)],
)
def test_thinning_factor_covers_the_ess_shortfall(ess, expected):
    cfg = EngineConfig(min_ess=400)
    f = ComponentFit("a", "a", "a", (), None, None, 1, ess_bulk=ess, ess_tail=1e4)
    assert min(thinning_factor([f], cfg), 8) == expected


def test_next_thin_doubles_at_least_and_stays_within_max_thin():
    assert next_thin(1, 2, 8) == 2
    assert next_thin(1, 8, 8) == 8
    assert next_thin(1, 64, 8) == 8
    assert next_thin(2, 4, 8) == 8
    assert next_thin(1, 8, 6) == 4  # thin stays a power of two within max_thin


def test_a_family_far_short_of_its_ess_goes_straight_to_the_thinning_it_needs():
    plan = ScriptedPlan({"UCB": 500, "EI": 90})
    comps, fits, probs = fit_components(plan, EngineConfig(min_ess=400, max_thin=8))
    # EI: 90 x thin >= 400 needs thin 8 (4 would give 360): one rerun, not three; UCB is never resampled
    assert plan.passes == [{"UCB": 1, "EI": 1}, {"EI": 8}]
    assert [f.thin for f in fits] == [1, 8]


def test_a_joint_plan_reruns_every_component_at_the_same_thinning():
    plan = ScriptedPlan({"UCB": 500, "EI": 150}, joint=True)
    fit_components(plan, EngineConfig(min_ess=400, max_thin=8))
    assert plan.passes == [{"UCB": 1, "EI": 1}, {"UCB": 4, "EI": 4}]


def test_the_loop_stops_at_max_thin_when_the_target_cannot_be_met():
    plan = ScriptedPlan({"UCB": 500, "EI": 20})
    comps, fits, probs = fit_components(plan, EngineConfig(min_ess=400, max_thin=8))
    assert plan.passes == [{"UCB": 1, "EI": 1}, {"EI": 8}]
    assert fits[1].ess_bulk < 400


@pytest.mark.parametrize(
    "r_hat, bulk, tail, ok",
    [
        (1.01, 400.0, 400.0, True),  # the targets themselves are met
        (1.011, 900.0, 900.0, False),
        (1.0, 399.9, 900.0, False),
        (1.0, 900.0, 399.9, False),
        (math.nan, 900.0, 900.0, False),
        # a missing ESS misses its target in either place (Python's min kept or dropped it by argument order)
        (1.0, math.nan, 900.0, False),
        (1.0, 900.0, math.nan, False),
    ],
)
def test_meets_targets_one_rule_for_numbers_and_table_rows(r_hat, bulk, tail, ok):
    import numpy as np
    import pandas as pd

    from ibo_pymc.engine.fitting import meets_targets

    cfg = EngineConfig()
    assert meets_targets(r_hat, bulk, tail, cfg) is ok
    rows = pd.DataFrame({"r_hat": [r_hat, 1.0], "ess_bulk": [bulk, 500.0], "ess_tail": [tail, 500.0]})
    np.testing.assert_array_equal(meets_targets(rows["r_hat"], rows["ess_bulk"], rows["ess_tail"], cfg), [ok, True])


@pytest.mark.parametrize("where", [0, 1, 2])
def test_a_coordinate_that_never_moved_leaves_the_component_without_an_r_hat_wherever_it_is(where):
    """diagnose reduces over the coordinates with NaN kept: the result does not depend on the coordinate's place."""
    import numpy as np

    from ibo_pymc.engine.fitting import diagnose, meets_targets

    draws = np.random.default_rng(0).normal(size=(4, 200, 3))
    draws[:, :, where] = 0.25
    with np.errstate(invalid="ignore", divide="ignore"):
        r, bulk, tail = diagnose(draws)
    assert math.isnan(r) and bulk > 0 and tail > 0
    assert not meets_targets(r, bulk, tail, EngineConfig())
