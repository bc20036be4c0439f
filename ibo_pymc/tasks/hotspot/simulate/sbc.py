"""Simulation-based calibration (SBC) of the sampled model.

Each replicate draws the truth and the data from the generative PyMC model
itself (:func:`~ibo_pymc.tasks.hotspot.model.generative.prior_predictive_draw`:
``pm.sample_prior_predictive`` of ``family ~ Categorical``, every continuous
parameter from its prior object, ``theta2`` from the wrapped-Cauchy mixture
``CustomDist``) at ``n_obs`` values of delta_r1 drawn as the move-2 simulator
draws them (U(-34, 34), SPEC section 8); it then fits
:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`, thins the posterior to ``n_ranks`` draws
and records, for every scalar quantity, the rank of the true value among them.
If the fit is calibrated each rank is uniform on 0..n_ranks; :func:`uniformity`
applies a chi-square test to the rank histogram of each quantity.

The quantities are the continuous parameters of the family-marginalised
model and the family itself. A shape parameter of a family other than a
draw's own is a prior draw in the posterior, exactly as it is in the truth, so
every quantity is calibrated jointly with the family choice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ibo_pymc.execution.runner import Job, run_jobs
from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations

#: delta_r1 of simulated rounds ~ U(-34, 34) (SPEC section 8, as in :func:`~ibo_pymc.tasks.hotspot.simulate.moves.simulate_moves`)
DELTA_RANGE = (-34.0, 34.0)


def _rank(draws: np.ndarray, truth: float, rng: np.random.Generator) -> int:
    """The rank of ``truth`` among ``draws``, ties broken at random as SBC prescribes."""
    less = int((draws < truth).sum())
    equal = int((draws == truth).sum())
    return less + int(rng.integers(0, equal + 1))


def sbc_replicate(model: str, seed, *, n_obs: int = 60, n_ranks: int = 99, draws: int = 500, tune: int = 500,
                  chains: int = 2, tables=None) -> dict:
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
    obs = SubjectObservations(subject=0, user_id=0, session_id=rounds, round_index=rounds, delta_r1=d, theta2=np.zeros(n_obs))
    truth, theta2 = prior_predictive_draw(obs, model, tables=tables, random_seed=np.random.default_rng(s_prior))
    obs = SubjectObservations(subject=0, user_id=0, session_id=rounds, round_index=rounds, delta_r1=d, theta2=theta2)
    m = IBOModel(obs, model, draws=draws, tune=tune, chains=chains, seed=int(s_fit.generate_state(1)[0]))
    idata = m.fit(progress=False)
    post = idata.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    rng = np.random.default_rng(s_thin)
    pick = np.sort(rng.choice(total, size=n_ranks, replace=False))
    families = list(post["family"].values)
    k = families.index(truth["family"])
    out = {"family": truth["family"], "family_index": k}
    for name, v in truth.items():
        if name != "family":
            out[name] = _rank(post[name].values.reshape(-1)[pick], v, rng)
    # the family index as a discrete quantity
    out["family_draw"] = _rank(post["family_draw"].values.reshape(-1)[pick], k, rng)
    out["max_rhat"] = float(np.nanmax(component_table(m.idata)["r_hat"]))
    return out


def run_sbc(model: str, reps: int, *, seed: int = 0, executor=None, progress=None, **kw) -> pd.DataFrame:
    """``reps`` SBC replicates as a table (one row per replicate, in replicate order; one column per quantity's rank).

    Replicate ``i`` has its own seed (spawned from ``seed``), so the table does
    not depend on ``executor`` (None: this process; see :mod:`ibo_pymc.execution`).
    """
    seeds = np.random.SeedSequence(seed).spawn(reps)
    tasks = [Job(f"SBC replicate {i + 1}", sbc_replicate, (model, s), kw) for i, s in enumerate(seeds)]
    out = run_jobs(tasks, executor, label="sbc", progress=progress).raise_failures()
    return pd.DataFrame(out.results)


def uniformity(ranks: pd.DataFrame, n_ranks: int = 99, bins: int = 10) -> pd.DataFrame:
    """Chi-square test of uniform ranks per quantity (``bins`` equal bins of 0..n_ranks)."""
    from scipy import stats

    skip = {"family", "family_index", "max_rhat"}
    rows = []
    edges = np.linspace(0, n_ranks + 1, bins + 1)
    for col in ranks.columns:
        if col in skip:
            continue
        counts, _ = np.histogram(ranks[col].to_numpy(), bins=edges)
        expected = len(ranks) / bins
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        rows.append({"quantity": col, "chi2": chi2, "df": bins - 1, "p_value": float(stats.chi2.sf(chi2, bins - 1)), "reps": len(ranks)})
    return pd.DataFrame(rows).set_index("quantity")


def plot_ranks(ranks: pd.DataFrame, n_ranks: int = 99, bins: int = 10):
    """Rank histograms with the 99% band of a uniform histogram, one panel per quantity."""
    import matplotlib.pyplot as plt
    from scipy import stats

    cols = [c for c in ranks.columns if c not in ("family", "family_index", "max_rhat")]
    ncols = 4
    nrows = int(np.ceil(len(cols) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.3 * nrows), squeeze=False)
    edges = np.linspace(0, n_ranks + 1, bins + 1)
    n = len(ranks)
    lo, hi = stats.binom.ppf([0.005, 0.995], n, 1 / bins)
    test = uniformity(ranks, n_ranks, bins)
    for ax, c in zip(axes.ravel(), cols):
        ax.axhspan(lo, hi, color="0.88", lw=0)
        ax.axhline(n / bins, color="0.5", lw=0.8)
        ax.hist(ranks[c], bins=edges, color="tab:blue", alpha=0.8)
        ax.set_title(f"{c}  (chi-square p = {test.loc[c, 'p_value']:.2f})", fontsize=8)
        ax.set_yticks([])
    for ax in axes.ravel()[len(cols):]:
        ax.set_visible(False)
    fig.suptitle(f"SBC rank histograms, {n} replicates (grey: 99% band of a uniform histogram)", fontsize=9)
    fig.tight_layout()
    return fig
