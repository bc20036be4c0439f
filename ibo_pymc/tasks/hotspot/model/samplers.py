"""The NUTS back ends of a fit: nutpie on the compiled density (default) or ``pm.sample`` on the PyMC model.

Both sample the stacked layout (the components' conditional posteriors side by
side), start each chain at one of ``inits`` (unconstrained points drawn from
the grid posterior) and return ``(posterior, sample_stats)`` as xarray Datasets.
"""

from __future__ import annotations

import dataclasses

import numpy as np


def sample_nutpie(sd, comps, inits, *, draws, tune, chains, cores, seed, progress, constrain=None):
    """nutpie on the cached C callback of the stacked density (:mod:`ibo_pymc.tasks.hotspot.model.compiled`)."""
    from ibo_pymc.engine.samplers import nutpie_sample
    from ibo_pymc.tasks.hotspot.model.compiled import compile_model

    cm = compile_model(sd, "stacked", comps)

    def initial_point(s):
        return inits[np.random.default_rng(s).integers(len(inits))].copy()

    cm = dataclasses.replace(cm, initial_point_func=initial_point)
    tr = nutpie_sample(cm, draws=draws, tune=tune, chains=chains, cores=cores, seed=seed, progress_bar=progress)
    return tr.posterior, tr.sample_stats


def sample_pymc(sd, comps, inits, *, draws, tune, chains, cores, seed, progress, constrain):
    """``pm.sample`` on the stacked PyMC model; ``constrain`` maps an unconstrained start to initial values."""
    import pymc as pm

    from ibo_pymc.tasks.hotspot.model.builder import build_model

    m = build_model(sd, layout="stacked", components=comps)
    rng = np.random.default_rng(seed)
    initvals = [constrain(inits[rng.integers(len(inits))]) for _ in range(chains)]
    with m:
        tr = pm.sample(
            draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=seed,
            initvals=initvals,
            progressbar=progress,
            compute_convergence_checks=False,
        )
    return tr.posterior, tr.sample_stats


#: sampler name (FitConfig.sampler) -> back end
BACKENDS = {"nutpie": sample_nutpie, "pymc": sample_pymc}
