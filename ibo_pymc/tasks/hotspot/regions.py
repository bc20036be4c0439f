"""Credible and prediction regions of a fit (docs: explanation/loo).

* :func:`circular_hdi` -- the highest-density region of circular draws as a
  list of arcs. ArviZ 0.23 ignores ``circular=True`` when ``multimodal=True``
  (its multimodal HDI cuts the circle at +-pi), so this takes ArviZ's circular
  kernel density estimate (:func:`arviz.kde` with ``circular=True``) over the
  whole circle and keeps the densest grid cells up to the requested mass
  (:func:`density_hdi`); the runs of kept cells are the arcs, joined across
  +-pi. Arcs that pass through +-pi come back as ``(lo, hi)`` with ``lo > hi``.
* The prediction region of a fit does not need a kernel estimate: the
  posterior-predictive density of theta2 at a delta_r1 is the average of the
  draws' wrapped-Cauchy mixture densities, exact on a grid of 720 angles, and
  its :func:`density_hdi` is the region.
* :func:`curve_draws` -- posterior draws of the acquisition curve
  theta*(delta_r1) on a delta_r1 grid, each draw under its own family.
* :func:`predictive_draws` -- posterior-predictive draws of theta2 on that grid.
* :func:`regions` -- both bands on a grid: the 95% HDI of theta* (credible
  region) and the 95% circular HDI of theta2 (prediction region).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.tasks.hotspot.circular import wrap_angle
from ibo_pymc.tasks.hotspot.forward.variants import get_variant


def _arc_contains(arcs, x) -> np.ndarray:
    x = wrap_angle(x)
    inside = np.zeros(np.shape(x), bool)
    for lo, hi in arcs:
        inside |= ((x >= lo) & (x <= hi)) if lo <= hi else ((x >= lo) | (x <= hi))
    return inside


def arcs_contain(arcs, x) -> np.ndarray:
    """Whether each angle in ``x`` lies in the union of ``arcs`` (as returned by :func:`circular_hdi`)."""
    return _arc_contains(arcs, x)


def arc_length(arcs) -> float:
    """Total length (radians) of a list of arcs."""
    return float(sum((hi - lo) if lo <= hi else (2 * np.pi - lo + hi) for lo, hi in arcs))


def density_hdi(grid, density, prob: float = HDI_PROB) -> list[tuple[float, float]]:
    """The ``prob`` highest-density region of a density tabulated on an even grid around the circle.

    ``grid`` holds the cell centres (spacing 2 pi / len(grid)); the region is
    the densest cells up to ``prob`` of the mass. Returns arcs as
    :func:`circular_hdi` does.
    """
    grid = np.asarray(grid, float)
    mass = np.asarray(density, float)
    mass = mass / mass.sum()
    if not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1), got {prob}")
    step = 2 * np.pi / len(grid)
    order = np.argsort(-mass, kind="stable")
    n_in = int(np.searchsorted(np.cumsum(mass[order]), prob)) + 1
    inside = np.zeros(len(grid), bool)
    inside[order[:n_in]] = True
    if inside.all():
        return [(-np.pi, np.pi)]
    # runs of kept cells, joined across the end of the grid
    start = int(np.flatnonzero(~inside)[0])
    rolled = np.roll(inside, -start)
    edges = np.flatnonzero(np.diff(np.r_[0, rolled.astype(int), 0]))
    arcs = []
    for j, k in zip(edges[::2], edges[1::2] - 1):
        a, b = grid[(j + start) % len(grid)], grid[(k + start) % len(grid)]
        arcs.append((float(wrap_angle(a - step / 2)), float(wrap_angle(b + step / 2))))
    return sorted(arcs)


def circular_hdi(
    draws, prob: float = HDI_PROB, *, bw: float | str = "taylor", min_mass: float = 0.005
) -> list[tuple[float, float]]:
    """The ``prob`` highest-density region of angles (radians) as a list of arcs.

    The density is ArviZ's circular (von Mises kernel) estimate over the whole
    circle (:func:`arviz.kde` with ``circular=True``), and the region is its
    :func:`density_hdi`. Where the density is nearly flat (heavy tails) the
    estimate's wiggles can leave slivers; arcs holding less than ``min_mass``
    of the draws are dropped. Each arc is ``(lo, hi)`` in (-pi, pi]; ``lo > hi``
    marks an arc through +-pi. Draws that all coincide give one zero-length arc.
    """
    import arviz as az

    x = wrap_angle(np.asarray(draws, float).ravel())
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("circular_hdi needs at least one finite draw")
    if np.ptp(x) < 1e-12:
        return [(float(x[0]), float(x[0]))]
    grid, pdf = az.kde(x, circular=True, bw=bw)
    arcs = density_hdi(grid, pdf, prob)
    kept = [a for a in arcs if arcs_contain([a], x).mean() >= min_mass]
    return kept or arcs


# --- a fit's regions ---------------------------------------------------------------------
def _thin(n_total: int, n: int | None, rng) -> np.ndarray:
    if n is None or n >= n_total:
        return np.arange(n_total)
    return np.sort(rng.choice(n_total, size=n, replace=False))


def curve_draws(idata, delta_r1, *, n_draws: int | None = 1000, seed: int = 0, tables=None) -> dict:
    """Posterior draws of theta*(delta_r1) on a grid, each under the family of its draw.

    Returns ``{"theta_star": (S, G), "family": (S,), "gamma": (S,), "w": (S,)}``
    for S draws (a random subset of ``n_draws``, reproducible with ``seed``).
    """
    import json

    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
    from ibo_pymc.tasks.hotspot.forward.argmax import TableConfig, load_tables
    from ibo_pymc.tasks.hotspot.model.lookup import RoundTables, lookup_numpy

    post = idata.posterior
    d = np.asarray(delta_r1, float)
    rng = np.random.default_rng(seed)
    stacked = {v: post[v].values.reshape(-1, *post[v].shape[2:]) for v in post.data_vars}
    idx = _thin(stacked["gamma"].shape[0], n_draws, rng)
    fams = post["family_draw"].attrs["labels"].split(",")
    model = post.attrs["model"]
    if tables is None:
        cfg = json.loads(post.attrs["config"]).get("tables")
        tables = load_tables(TableConfig.from_dict(cfg) if cfg else None)
    rt = RoundTables.from_tables(tables, d, tuple(fams))
    fam = stacked["family_draw"][idx]
    variant = get_variant(model)
    tn, tp = variant.tau_pair({n: stacked[n][idx] for n in variant.taus}, like=idx)
    ts = np.zeros((len(idx), len(d)))
    for k, f in enumerate(fams):
        m = fam == k
        if not m.any():
            continue
        p = stacked[get_family(f).var_name][idx][m]
        pos = lookup_numpy(rt, f, p, tp[m])  # (draws, G)
        neg = lookup_numpy(rt, f, p, tn[m])
        ts[m] = np.where(d[None, :] < 0, neg, pos)
    return {"theta_star": ts, "family": fam, "gamma": stacked["gamma"][idx], "w": stacked["w"][idx], "labels": fams}


def predictive_draws(curves: dict, *, seed: int = 0, per_draw: int = 1) -> np.ndarray:
    """Posterior-predictive theta2 on the grid of :func:`curve_draws`: (S * per_draw, G)."""
    from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_random

    rng = np.random.default_rng(seed)
    ts = np.repeat(curves["theta_star"], per_draw, axis=0)
    g = np.repeat(curves["gamma"], per_draw)[:, None]
    w = np.repeat(curves["w"], per_draw)[:, None]
    return wc_mixture_random(ts, g, w, rng=rng)


def predictive_density(curves: dict, n_angles: int = 720) -> tuple[np.ndarray, np.ndarray]:
    """The posterior-predictive density of theta2 at each grid delta_r1: angles (A,), density (G, A).

    The average over the draws of each draw's wrapped-Cauchy mixture density
    (exact; no kernel estimate).
    """
    from ibo_pymc.tasks.hotspot.kernel import logpdf

    step = 2 * np.pi / n_angles
    angles = -np.pi + step * (np.arange(n_angles) + 0.5)
    ts = curves["theta_star"]
    out = np.zeros((ts.shape[1], n_angles))
    for j in range(ts.shape[1]):
        lp = logpdf(angles[None, :], ts[:, j, None], curves["gamma"][:, None], curves["w"][:, None])
        out[j] = np.exp(lp).mean(axis=0)
    return angles, out


@dataclass
class Regions:
    """Bands of a fit on a delta_r1 grid."""

    delta_r1: np.ndarray
    curve_median: np.ndarray  # (G,) posterior median of theta*
    credible: np.ndarray  # (G, 2) HDI of theta* at each delta_r1
    prediction: list  # G lists of arcs: the HDI of theta2 at each delta_r1
    family_share: np.ndarray  # (F,) share of draws per family
    labels: list
    prob: float

    def contains_curve(self, theta_star) -> np.ndarray:
        """Whether a curve (G,) lies inside the credible band at each grid point."""
        t = np.asarray(theta_star, float)
        return (t >= self.credible[:, 0] - 1e-12) & (t <= self.credible[:, 1] + 1e-12)

    def contains_theta2(self, index: int, theta2) -> np.ndarray:
        """Whether angles lie in the prediction region at grid point ``index``."""
        return arcs_contain(self.prediction[index], theta2)


def regions(
    idata, delta_r1=None, *, prob: float = HDI_PROB, n_draws: int = 1000, seed: int = 0, tables=None
) -> Regions:
    """The credible region of theta*(delta_r1) and the prediction region of theta2 (docs: explanation/loo)."""
    import arviz as az

    d = np.linspace(-34, 34, 69) if delta_r1 is None else np.asarray(delta_r1, float)
    cur = curve_draws(idata, d, n_draws=n_draws, seed=seed, tables=tables)
    ts = cur["theta_star"]
    cred = np.array(
        [az.hdi(ts[:, j], hdi_prob=prob) if np.ptp(ts[:, j]) > 0 else (ts[0, j], ts[0, j]) for j in range(len(d))]
    )
    angles, dens = predictive_density(cur)
    pred = [density_hdi(angles, dens[j], prob) for j in range(len(d))]
    share = np.bincount(cur["family"], minlength=len(cur["labels"])) / len(cur["family"])
    return Regions(d, np.median(ts, axis=0), cred, pred, share, cur["labels"], prob)
