"""The fit configuration in three parts (model, sampler, convergence policy), read flat, hashed, saved."""

from __future__ import annotations

import json
import pickle

import cloudpickle
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.forward.argmax import TableConfig
from ibo_pymc.tasks.hotspot.model.config import (
    ConvergencePolicy,
    FitConfig,
    ModelConfig,
    SamplerConfig,
)


def test_flat_settings_go_to_their_part_and_read_back_flat():
    cfg = FitConfig(model="tau", draws=200, seed=3, target_rhat=1.05)
    assert cfg.model_config == ModelConfig("tau")
    assert cfg.sampler_config == SamplerConfig(draws=200, seed=3)
    assert cfg.convergence == ConvergencePolicy(target_rhat=1.05)
    assert (cfg.model, cfg.draws, cfg.seed, cfg.target_rhat, cfg.chains) == ("tau", 200, 3, 1.05, 4)
    assert cfg.spec.parameters[-1] == "tau"
    assert cfg.replace(chains=2).chains == 2 and cfg.chains == 4
    parts = FitConfig.from_parts(
        ModelConfig("tau"), SamplerConfig(draws=200, seed=3), ConvergencePolicy(target_rhat=1.05)
    )
    assert parts == cfg and hash(parts) == hash(cfg)
    with pytest.raises(AttributeError):
        cfg.no_such_setting  # noqa: B018


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"drawz": 3}, "drawz"),
        ({"model": "tau2"}, "model"),
        ({"sampler": "x"}, "sampler"),
        ({"chains": 0}, "chains"),
        ({"seed": -1}, "seed"),
        ({"max_strata": 0}, "max_strata"),
    ],
)
def test_bad_settings_are_one_line_input_errors(kw, field):
    with pytest.raises(InputError) as e:
        FitConfig(**kw)
    assert e.value.field == field and "\n" not in str(e.value)


def test_round_trips_and_hashes():
    cfg = FitConfig(model="tau", draws=20, seed=3, tables=TableConfig(n_tau=10))
    assert FitConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert pickle.loads(pickle.dumps(cfg)) == cfg and cloudpickle.loads(cloudpickle.dumps(cfg)) == cfg
    # fits saved before the split stored the settings flat: they load, with the same hash
    assert FitConfig.from_dict(cfg.settings()) == cfg
    # the whole-configuration hash is the one those fits recorded (so they are still reused; they were made at
    # the tuning default of the time, 1000)
    assert FitConfig(model="tau", draws=20, seed=3, tune=1000).key() == "704e7eca84c47a3f"
    assert FitConfig(model="tau", draws=20, seed=3).key() != "704e7eca84c47a3f"  # the default is 500 now
    # the model hash ignores the sampler and the policy, not the model
    assert cfg.model_key() == cfg.replace(draws=999, seed=1, min_ess=10.0).model_key()
    assert cfg.model_key() != cfg.replace(model="tau_pm").model_key()
    assert cfg.key() != cfg.replace(seed=4).key()
