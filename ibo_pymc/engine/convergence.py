"""R-hat and bulk / tail effective sample sizes of MCMC draws: the rank-normalised split diagnostics of Vehtari,
Gelman, Simpson, Carpenter & Bürkner (2021), the convergence targets of every fit.

The estimators are ArviZ's (``arviz.rhat``, ``arviz.ess``), computed through arviz-stats' array interface,
which ArviZ 0.23 itself imports and ArviZ 1.0 is built on. Why not call ``arviz.rhat``: it computes a variance
with a Numba function that is compiled afresh in every process (about 0.1 s, once per ``ibo-sample`` and once
per Dask worker), while arviz-stats is plain NumPy; the numbers agree to 1e-12 relative (tested).

Every function takes draws with the chain and draw axes given (default: the last two) and returns one value per
remaining element (a float for draws of shape (chain, draw)). A quantity that does not vary has no R-hat (NaN).
"""

from __future__ import annotations

import numpy as np

# ArviZ's tail ESS is the smaller of the ESS of the 5% and the 95% quantiles
TAIL_PROB = 0.05


def _stats():
    from arviz_stats.base import array_stats

    return array_stats


def _out(v):
    v = np.asarray(v, dtype=float)
    return float(v) if v.ndim == 0 else v


def rhat(draws, chain_axis: int = -2, draw_axis: int = -1):
    """Rank-normalised split R-hat."""
    return _out(_stats().rhat(np.asarray(draws, dtype=float), chain_axis=chain_axis, draw_axis=draw_axis))


def ess_bulk(draws, chain_axis: int = -2, draw_axis: int = -1):
    """Bulk effective sample size (rank-normalised)."""
    return _out(_stats().ess(np.asarray(draws, dtype=float), chain_axis=chain_axis, draw_axis=draw_axis, method="bulk"))


def ess_tail(draws, chain_axis: int = -2, draw_axis: int = -1):
    """Tail effective sample size: the smaller of the 5% and 95% quantiles' ESS."""
    return _out(
        _stats().ess(
            np.asarray(draws, dtype=float), chain_axis=chain_axis, draw_axis=draw_axis, method="tail", prob=TAIL_PROB
        )
    )


def diagnose_variable(da) -> tuple:
    """R-hat, bulk and tail ESS of an xarray variable with ``chain`` and ``draw`` dimensions, each an array
    over its other dimensions (in their order) or a float."""
    x = da.transpose(..., "chain", "draw").values
    return rhat(x), ess_bulk(x), ess_tail(x)


def worst(dataset, names) -> dict:
    """Worst R-hat and smallest bulk / tail ESS over every element of the variables ``names`` of a posterior
    ``dataset`` (NaN R-hats, of constant elements, ignored)."""
    r, b, t = [], [], []
    for n in names:
        rr, bb, tt = diagnose_variable(dataset[n])
        r.append(np.ravel(rr))
        b.append(np.ravel(bb))
        t.append(np.ravel(tt))
    return {
        "r_hat": float(np.nanmax(np.concatenate(r))),
        "ess_bulk": float(np.nanmin(np.concatenate(b))),
        "ess_tail": float(np.nanmin(np.concatenate(t))),
    }
