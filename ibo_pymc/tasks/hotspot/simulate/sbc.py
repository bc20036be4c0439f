"""Simulation-based calibration (SBC) of the hotspot task's sampled model (the ranks, their test and figure:
:mod:`ibo_pymc.engine.calibration`).

Each replicate draws the truth and the data from the generative PyMC model
itself (:func:`~ibo_pymc.tasks.hotspot.model.generative.prior_predictive_draw`:
``pm.sample_prior_predictive`` of ``family ~ Categorical``, every continuous
parameter from its prior object, ``theta2`` from the wrapped-Cauchy mixture
``CustomDist``) at ``n_obs`` values of delta_r1 drawn as the move-2 simulator
draws them (U(-34, 34)); it then fits
:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`, thins the posterior to ``n_ranks`` draws
and records, for every scalar quantity, the rank of the true value among them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ibo_pymc.engine import calibration
from ibo_pymc.engine.calibration import posterior_ranks
from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations

#: delta_r1 of simulated rounds ~ U(-34, 34) (docs: explanation/simulation, as in
#: :func:`~ibo_pymc.tasks.hotspot.simulate.moves.simulate_moves`)
DELTA_RANGE = (-34.0, 34.0)


def sbc_replicate(
    model: str,
    seed,
    *,
    n_obs: int = 60,
    n_ranks: int = 99,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    tables=None,
) -> dict:
    """One SBC replicate: the ranks of the true values among ``n_ranks`` thinned posterior draws."""
    from ibo_pymc.engine.results import component_table
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel
    from ibo_pymc.tasks.hotspot.model.generative import prior_predictive_draw

    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s_prior, s_data, s_fit, s_thin = ss.spawn(4)
    tables = tables or load_tables()
    d = np.random.default_rng(s_data).uniform(*DELTA_RANGE, size=n_obs)
    rounds = np.arange(1, n_obs + 1)
    obs = SubjectObservations(
        subject=0, user_id=0, session_id=rounds, round_index=rounds, delta_r1=d, theta2=np.zeros(n_obs)
    )
    truth, theta2 = prior_predictive_draw(obs, model, tables=tables, random_seed=np.random.default_rng(s_prior))
    obs = SubjectObservations(subject=0, user_id=0, session_id=rounds, round_index=rounds, delta_r1=d, theta2=theta2)
    m = IBOModel(obs, model, draws=draws, tune=tune, chains=chains, seed=int(s_fit.generate_state(1)[0]))
    idata = m.fit(progress=False)
    rng = np.random.default_rng(s_thin)
    out = posterior_ranks(
        idata.posterior, {n: v for n, v in truth.items() if n != "family"}, truth["family"], rng, n_ranks
    )
    out["max_rhat"] = float(np.nanmax(component_table(m.idata)["r_hat"]))
    return out


def run_sbc(model: str, reps: int, *, seed: int = 0, executor=None, progress=None, **kw) -> pd.DataFrame:
    """``reps`` SBC replicates of ``model`` as a table (one row per replicate, in replicate order; one column per
    quantity's rank; :func:`ibo_pymc.engine.calibration.run_sbc`)."""
    return calibration.run_sbc(sbc_replicate, (model,), reps, seed=seed, executor=executor, progress=progress, **kw)
