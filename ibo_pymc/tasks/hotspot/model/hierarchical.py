"""What the engine's hierarchical model (:mod:`ibo_pymc.engine.hierarchical`) takes of a hotspot fit.

A hotspot fit's components may be strata of a family (:mod:`~ibo_pymc.tasks.hotspot.model.sampling`), whose
draws live under a restricted prior; the population sees every draw on the logit scale of the family's whole
prior interval, and each stratum with its evidence under the whole prior. The rest is the engine's.
"""

from __future__ import annotations

import numpy as np

from ibo_pymc.engine.hierarchical import SubjectDraws, even_indices


def subject_draws(fit, n_draws: int = 500, *, drop_below: float = 40.0) -> SubjectDraws:
    """The :class:`~ibo_pymc.engine.hierarchical.SubjectDraws` of a fitted
    :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`: ``n_draws`` conditional draws of each component (evenly
    thinned), components more than ``drop_below`` nats of evidence below the best left out."""
    from ibo_pymc.engine.results import component_table
    from ibo_pymc.tasks.hotspot.model.builder import components

    idata = fit.idata
    comps = components(idata)
    table = component_table(idata)
    cond = {n: np.asarray(idata.conditional_posterior[n].values, float) for n in idata.conditional_posterior.data_vars}
    fams = tuple(fit.sd.families)
    p = fit.parameters
    keys = [key for key, _, _ in p.columns(comps[0])]  # param, gamma, w, the free taus
    keep = table["log_evidence"].to_numpy() >= table["log_evidence"].max() - drop_below
    zs, fam_idx, logev = [], [], []
    for k, c in enumerate(comps):
        if not keep[k]:
            continue
        d = p.draws(comps, cond, k)
        flat = {key: np.asarray(d[key]).reshape(-1) for key in keys}
        total = len(flat["gamma"])
        idx = even_indices(total, n_draws)
        # the logit over the whole prior interval (also for a stratum's draws), as the population sees them
        z = np.stack([c.prior(p.model_name(key)).to_unconstrained(flat[key][idx], eps=1e-12) for key in keys], axis=-1)
        zs.append(z)
        fam_idx.append(fams.index(c.family))
        logev.append(float(table["log_evidence"].iloc[k]))
    S = min(len(z) for z in zs)
    priors = fit.priors(fams[0])
    shared = tuple(p.model_name(key) for key in keys[1:])
    shape = tuple(next((n, pr) for n, pr in fit.priors(f).items() if n not in shared) for f in fams)
    return SubjectDraws(
        int(fit.obs.subject),
        fit.config.model,
        fams,
        np.array(fam_idx),
        np.array(logev),
        np.stack([z[:S] for z in zs]),
        ("param", *shared),
        fit,
        tuple(priors[n] for n in shared),
        shape,
    )
