"""The generalisation table (:mod:`ibo_pymc.tasks.gridsearch.generalisation`) on posteriors whose answer is
known: participants' lambda draws around chosen centres, in both environment classes."""

from __future__ import annotations

import numpy as np
import pytest

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.gridsearch.generalisation import TRUE_LAMBDA, generalisation_table, participant_table


def _cohort(seed=0):
    rng = np.random.default_rng(seed)
    draws, envs = {}, {}
    for p in range(1, 41):
        env = "rough" if p <= 20 else "smooth"
        # rough: every participant well below 1; smooth: centres spread around 1.5, two of them above 2
        centre = 0.6 if env == "rough" else (2.6 if p in (39, 40) else 1.2 + 0.02 * (p - 21))
        draws[p] = centre * np.exp(0.05 * rng.standard_normal(2000))
        envs[p] = env
    return draws, envs


def test_participant_rows():
    draws, envs = _cohort()
    t = participant_table(draws, envs, experiment="1d").set_index("participant")
    assert len(t) == 40 and (t["experiment"] == "1d").all()
    assert t.loc[1, "true_lambda"] == TRUE_LAMBDA["rough"] and t.loc[30, "true_lambda"] == TRUE_LAMBDA["smooth"]
    assert t.loc[1, "lambda_median"] == pytest.approx(np.median(draws[1]))
    assert t.loc[1, "lambda_lo"] < t.loc[1, "lambda_median"] < t.loc[1, "lambda_hi"]
    assert t.loc[1, "below"] and not t.loc[1, "above"] and t.loc[1, "p_below"] == 1.0
    assert t.loc[40, "above"] and not t.loc[40, "below"] and t.loc[40, "p_below"] == 0.0


def test_cohort_rows_and_their_intervals():
    draws, envs = _cohort()
    t = generalisation_table(draws, envs, experiment="2d", resamples=2000, seed=1).set_index("environment")
    assert list(t.index) == ["rough", "smooth"] and (t["participants"] == 20).all()
    rough, smooth = t.loc["rough"], t.loc["smooth"]
    assert rough["below"] == 20 and rough["above"] == 0 and rough["p_below"] == 1.0
    assert rough["lo"] < rough["lambda_median"] < rough["hi"] < 0.7
    assert smooth["below"] == 18 and smooth["above"] == 2 and smooth["p_below"] > 0.99
    # the cohort median's interval is wider than one participant's posterior spread and covers the medians' median
    medians = [np.median(draws[p]) for p in range(21, 41)]
    assert smooth["lo"] < np.median(medians) < smooth["hi"] and smooth["hi"] - smooth["lo"] > 0.1
    again = generalisation_table(draws, envs, experiment="2d", resamples=2000, seed=1).set_index("environment")
    assert again.equals(t)  # seeded


def test_refusals():
    draws, envs = _cohort()
    envs[3] = "bumpy"
    with pytest.raises(InputError, match="participant 3"):
        participant_table(draws, envs)
    draws, envs = _cohort()
    with pytest.raises(InputError, match="whole number"):
        generalisation_table(draws, envs, resamples=0)
