"""Simulation-based calibration (SBC) of the sampled model.

Each replicate draws every parameter from the prior (the family uniformly
from PI, EI, UCB; the three shape parameters, gamma, w and the taus from their
uniform priors), simulates ``n_obs`` rounds from the drawn family, fits
:class:`~ibo_pymc.model.fit.IBOModel`, thins the posterior to ``n_ranks``
draws and records, for every scalar quantity, the rank of the true value
among them. If the fit is calibrated each rank is uniform on 0..n_ranks;
:func:`uniformity` applies a chi-square test to the rank histogram of each
quantity.

The quantities are the continuous parameters of the family-marginalised
model. A shape parameter of a family other than a draw's own is a prior draw
in the posterior, exactly as it is in the truth, so every quantity is
calibrated jointly with the family choice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ibo_pymc.simulate.moves import Truth, simulate_moves


def prior_draw(model: str, rng: np.random.Generator) -> dict:
    """One draw of every parameter of ``model`` from the prior (SPEC section 7)."""
    from ibo_pymc.forward.acquisition import get_family
    from ibo_pymc.model.builder import prior_bounds, tau_names

    fams = ("PI", "EI", "UCB")
    d = {"family": fams[rng.integers(3)]}
    for f in fams:
        d[get_family(f).var_name] = float(rng.uniform(*get_family(f).bounds))
    for n in ("gamma", "w", *tau_names(model)):
        d[n] = float(rng.uniform(*prior_bounds(n)))
    return d


def _truth(model: str, d: dict) -> Truth:
    from ibo_pymc.forward.acquisition import get_family
    from ibo_pymc.forward.variants import get_variant

    tn, tp = (float(t) for t in get_variant(model).tau_pair(d, like=0.0))
    return Truth(d["family"], d[get_family(d["family"]).var_name], gamma=d["gamma"], w=d["w"], tau_neg=tn, tau_pos=tp)


def sbc_replicate(model: str, seed, *, n_obs: int = 60, n_ranks: int = 99, draws: int = 500, tune: int = 500,
                  chains: int = 2, tables=None) -> dict:
    """One SBC replicate: the ranks of the true values among ``n_ranks`` thinned posterior draws."""
    from ibo_pymc.model.fit import IBOModel

    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s_prior, s_data, s_fit, s_thin = ss.spawn(4)
    rng = np.random.default_rng(s_prior)
    d = prior_draw(model, rng)
    obs = simulate_moves(_truth(model, d), n_obs, np.random.default_rng(s_data), tables=tables)
    m = IBOModel(obs, model, draws=draws, tune=tune, chains=chains, seed=int(s_fit.generate_state(1)[0]))
    idata = m.fit(progress=False)
    post = idata.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    pick = np.sort(np.random.default_rng(s_thin).choice(total, size=n_ranks, replace=False))
    out = {"family": d["family"], "family_index": ("PI", "EI", "UCB").index(d["family"])}
    for name, v in d.items():
        if name == "family":
            continue
        draws_ = post[name].values.reshape(-1)[pick]
        # ties (a constant quantity) are broken at random, as SBC prescribes
        less = int((draws_ < v).sum())
        equal = int((draws_ == v).sum())
        out[name] = less + int(np.random.default_rng(s_thin).integers(0, equal + 1))
    # the family index as a discrete quantity, ties broken at random
    fam = post["family_draw"].values.reshape(-1)[pick]
    k = out["family_index"]
    out["family_draw"] = int((fam < k).sum()) + int(np.random.default_rng(s_thin).integers(0, int((fam == k).sum()) + 1))
    from ibo_pymc.model.results import component_table

    out["max_rhat"] = float(np.nanmax(component_table(m.idata)["r_hat"]))
    return out


def _run_one(args):
    model, seed, kw = args
    return sbc_replicate(model, seed, **kw)


def run_sbc(model: str, reps: int, *, seed: int = 0, workers: int = 1, progress=None, **kw) -> pd.DataFrame:
    """``reps`` SBC replicates as a table (one row per replicate, one column per quantity's rank)."""
    seeds = np.random.SeedSequence(seed).spawn(reps)
    rows = []
    if workers == 1:
        it = (_run_one((model, s, kw)) for s in seeds)
        for i, r in enumerate(it):
            rows.append(r)
            if progress:
                progress(i + 1, reps)
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as ex:
            for i, r in enumerate(ex.map(_run_one, [(model, s, kw) for s in seeds])):
                rows.append(r)
                if progress:
                    progress(i + 1, reps)
    return pd.DataFrame(rows)


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
