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
