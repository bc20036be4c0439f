"""The paper's grid inference (docs: explanation/paper-grid): exact, vectorised, fast.

For one subject and one model (``u``, ``tau`` = ũ, ``tau_pm`` = ũ±):

* every grid cell (family, parameter, tau[, tau], gamma) has equal prior mass;
* theta* at each observed delta_r1 comes from the argmax tables by linear
  interpolation in delta_r1 (parameters and tau sit on grid values);
* the likelihood is the symmetric wrapped-Cauchy mixture of docs: explanation/model;
* the mixture weight is handled by EM exactly as the reference does: per-round
  weights start at 0.5; each pass evaluates the whole grid with the per-round
  weights in place of w, takes the MAP cell and recomputes each training round's
  responsibility of the +theta* component under it; passes stop once the summed
  absolute change is below 0.001, or after 9 passes. ``w_em`` is the mean
  responsibility. For ũ± the two halves (delta_r1 < 0 and >= 0) keep separate
  per-round weights, and the grid is the join of the halves on (family,
  parameter, gamma) with a tau for each half.

Speed: theta* on a round can only be ``(1-f) theta_a + f theta_b`` for the two
table angles ``a, b`` around its delta_r1, so each round has a short list of
distinct theta* values across all cells. The engine evaluates the mixture once
per (round, distinct value, gamma) and multiplies along each row of cells in one
compiled loop (one logarithm per block of rounds, :func:`_row_loglik`); cells
whose curves coincide on the data (e.g. PI with xi = 0 and UCB with p = 0.5)
share one row and hence exactly equal log-likelihoods.

Ties between cells with equal log-likelihood are broken in a fixed, documented
order (:data:`TIE_ORDER`): family ``UCB`` before ``PI`` before ``EI`` (then any
user-registered family in table order), so the pure-exploitation curve shared
by PI(xi = 0) and UCB(p = 0.5) is reported as UCB p = 0.5; then the larger
(more exploratory) tau; then the smaller shape parameter; then the smaller
gamma; for ũ± the order is family, tau^-, parameter, gamma, tau^+.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numba
import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.tasks.hotspot.forward.acquisition import get_family
from ibo_pymc.tasks.hotspot.forward.argmax import ArgmaxTables, TableConfig, load_tables
from ibo_pymc.tasks.hotspot.forward.variants import get_variant
from ibo_pymc.tasks.hotspot.kernel import bracket, logpdf, scale_terms

#: Family preference on exact ties (see module docstring).
TIE_ORDER = ("UCB", "PI", "EI")


@dataclass(frozen=True)
class PaperGridConfig:
    """Everything that defines a grid fit besides the data."""

    tables: TableConfig = field(default_factory=TableConfig)
    n_gamma: int = 61
    gamma_min: float = 0.01
    gamma_max: float = float(np.pi / 4)
    em_tol: float = 1e-3
    em_max_passes: int = 9
    credible_mass: float = 0.95

    @property
    def gamma(self) -> np.ndarray:
        return np.linspace(self.gamma_min, self.gamma_max, self.n_gamma)


#: gammas a pass of :func:`_row_loglik` multiplies together: one 64-byte cache line of a value's brackets
_GAMMA_BLOCK = 8


@numba.njit(cache=True, error_model="numpy")
def _row_loglik(rows_t, s_plus, s_minus, w, gamma):
    """Summed log mixture density of every distinct curve row and gamma: (R, G).

    ``rows_t`` (N, R) indexes, for each round and each row of cells with one curve, that round's distinct
    (theta2, theta*) value; ``s_plus``/``s_minus`` hold sin^2((theta2 -+ theta*) / 2) of the values and ``w``
    their round's weight of the +theta* component. The density of a value is
    sinh(g) / (4 pi) * (w / (sh2 + s+) + (1 - w) / (sh2 + s-)) with
    sh2 = sinh^2(g / 2) (cosh g - cos d = 2 (sh2 + sin^2(d / 2))). The factor in
    brackets lies in [1 / (1 + sh2), 1 / sh2], so products of up to 64 rounds
    stay finite and one logarithm serves a block of rounds (its length depends on gamma): the coverage study's
    n_obs = 1000 fits and every hotspot fit's starting grid spend most of their time here.

    The loop is memory-bound: it gathers one bracket per round and row. It takes :data:`_GAMMA_BLOCK` gammas at a
    time, so that each pass over the (N, R) indexes serves that many gammas and each gather reads their brackets
    from one cache line (``x``: value-major), and the gammas are the inner loop, which the compiler vectorises.
    Each (row, gamma) product still runs over its rounds in order with the same blocks, so the result is the same
    to the bit as a loop over one gamma and one row at a time.
    """
    N, R = rows_t.shape
    G = gamma.shape[0]
    V = s_plus.shape[0]
    B = _GAMMA_BLOCK
    out = np.empty((R, G))
    x = np.empty((V, B))
    prod = np.empty((R, B))
    acc = np.empty((R, B))
    const = np.empty(B)
    block = np.empty(B, np.int64)
    for g0 in range(0, G, B):
        nb = min(B, G - g0)
        for j in range(B):
            if j < nb:
                sh2, c, b = scale_terms(gamma[g0 + j], N)
                const[j], block[j] = c, b
                for v in range(V):
                    x[v, j] = bracket(sh2, s_plus[v], s_minus[v], w[v])
            else:  # a last, partial block: the unused columns multiply ones (no overflow, no subnormals)
                for v in range(V):
                    x[v, j] = 1.0
        prod[:] = 1.0
        acc[:] = 0.0
        for i in range(N):
            row = rows_t[i]
            for r in range(R):
                xv = x[row[r]]
                for j in range(B):  # all B: a fixed trip count vectorises; columns past nb are ignored
                    prod[r, j] *= xv[j]
            for j in range(nb):
                if (i + 1) % block[j] == 0 or i == N - 1:  # the end of gamma j's block of rounds
                    for r in range(R):
                        acc[r, j] += math.log(prod[r, j])
                        prod[r, j] = 1.0
        for r in range(R):
            for j in range(nb):
                out[r, g0 + j] = acc[r, j] + const[j]
    return out


class _Half:
    """Precomputed structure of one set of rounds for fast grid log-likelihoods."""

    def __init__(self, tables: ArgmaxTables, tau_index: np.ndarray, delta_r1: np.ndarray, theta2: np.ndarray):
        cfg = tables.config
        self.theta2 = np.asarray(theta2, float)
        self.n = len(self.theta2)
        F, P = tables.values.shape[:2]
        K = len(tau_index)
        self.shape = (F, P, K)
        if self.n == 0:
            return
        theta = cfg.theta
        i, f = tables.delta_r1_weights(delta_r1)
        pairs = _knot_pairs(tables, tuple(int(t) for t in tau_index))
        # each round's distinct theta* values are its knot's distinct (a, b) angle pairs
        counts = pairs.n_pairs[i]
        offsets = np.r_[0, np.cumsum(counts)[:-1]]
        inv = pairs.local[:, i] + offsets[None, :]  # (C, N) column of each cell's value
        self.round_of = np.repeat(np.arange(self.n), counts)
        pos = np.arange(counts.sum()) - np.repeat(offsets, counts)
        pair = pairs.codes[pairs.start[i[self.round_of]] + pos]
        nt = len(theta)
        fr = f[self.round_of]
        self.values = theta[pair // nt] * (1.0 - fr) + theta[pair % nt] * fr
        x = self.theta2[self.round_of]
        self.s_plus = np.sin((x - self.values) / 2.0) ** 2  # component at +theta*
        self.s_minus = np.sin((x + self.values) / 2.0) ** 2  # component at -theta*
        vals = tables.values[:, :, tau_index, :]
        # cells whose curves coincide on these rounds share a row: hash rows, then verify
        rng = np.random.default_rng(12345)
        h = inv @ rng.integers(1, 2**62, size=self.n, dtype=np.int64)
        _, first, row_of_cell = np.unique(h, return_index=True, return_inverse=True)
        rows = inv[first]
        if not np.array_equal(rows[row_of_cell.ravel()], inv):  # hash collision: exact fallback
            rows, row_of_cell = np.unique(inv, axis=0, return_inverse=True)
        self.row_of_cell = row_of_cell.ravel()
        # (round, row), 32-bit: the kernel streams these indexes (:func:`_row_loglik`)
        self.rows_t = np.ascontiguousarray(rows.T, dtype=np.int32)
        # a cell's curve at these rounds is interpolated when asked for (responsibilities: one cell per EM pass),
        # not for every cell up front (half the time of this constructor)
        self._vals, self._knot, self._frac = vals, i, f

    def loglik(self, gamma: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Log-likelihood (C, G) of every cell and gamma with per-round weights."""
        C = int(np.prod(self.shape))
        if self.n == 0:
            return np.zeros((C, len(gamma)))
        w = np.clip(weights[self.round_of], 0.0, 1.0)
        return _row_loglik(self.rows_t, self.s_plus, self.s_minus, w, np.asarray(gamma, float))[self.row_of_cell]

    def cell_curve(self, cell: int) -> np.ndarray:
        """theta* of one cell (a flat index into (F, P, K)) at each round, interpolated between the table's knots."""
        v = self._vals[np.unravel_index(cell, self.shape)]
        return v[self._knot] * (1.0 - self._frac) + v[self._knot + 1] * self._frac

    def responsibilities(self, cell: int, gamma: float) -> np.ndarray:
        """Responsibility of the +theta* component for each round under one cell."""
        if self.n == 0:
            return np.zeros(0)
        ts = self.cell_curve(cell)
        lp = logpdf(self.theta2, ts, gamma, 1.0)
        lm = logpdf(self.theta2, ts, gamma, 0.0)
        return 1.0 / (1.0 + np.exp(lm - lp))


def credible_cells(posterior: np.ndarray, mass: float = 0.95) -> np.ndarray:
    """Boolean mask of the highest-mass grid cells holding ``mass`` of a posterior (any shape)."""
    flat = np.asarray(posterior, float).ravel()
    flat = flat / flat.sum()
    order = np.argsort(-flat, kind="stable")
    k = int(np.searchsorted(np.cumsum(flat[order]), mass - 1e-12)) + 1
    keep = np.zeros(flat.size, bool)
    keep[order[: min(k, flat.size)]] = True
    return keep.reshape(np.shape(posterior))


@dataclass
class PaperGridFit:
    """Result of a grid fit for one subject and model.

    ``posterior`` is an :class:`xarray.DataArray` of posterior masses over the full
    grid with dims ``(family, param_index, tau, gamma)`` (``u``, ``tau``) or
    ``(family, param_index, tau_neg, tau_pos, gamma)`` (``tau_pm``); ``map`` is a
    dict of the MAP cell; ``w_em`` the mean EM responsibility (``w_em_half``
    holds the mean of each half for ũ±).
    """

    model: str
    subject: int | None
    config: PaperGridConfig
    dims: tuple
    coords: dict = field(repr=False)
    attrs: dict = field(repr=False)
    parts: dict = field(repr=False)  # per-half log-likelihood arrays (F, P, K, G)
    map: dict
    w_em: float
    w_em_half: dict
    em_passes: int
    tables: ArgmaxTables = field(repr=False)

    @functools.cached_property
    def log_likelihood(self) -> xr.DataArray:
        """Log-likelihood of every grid cell (with the final EM per-round weights)."""
        if get_variant(self.model).split_by_sign:
            ll = self.parts["neg"][:, :, :, None, :] + self.parts["pos"][:, :, None, :, :]
        else:
            ll = self.parts["all"]
        return xr.DataArray(ll, dims=self.dims, coords=self.coords, name="log_likelihood", attrs=self.attrs)

    @functools.cached_property
    def posterior(self) -> xr.DataArray:
        """Posterior mass of every grid cell (uniform prior over cells)."""
        ll = self.log_likelihood.values
        post = np.exp(ll - ll.max())
        post /= post.sum()
        return xr.DataArray(post, dims=self.dims, coords=self.coords, name="posterior", attrs=self.attrs)

    # --- summaries ------------------------------------------------------------
    def marginal(self) -> xr.DataArray:
        """Posterior mass of each acquisition function (gamma marginalised)."""
        return self.posterior.sum("gamma")

    def family_probabilities(self) -> pd.Series:
        dims = [d for d in self.posterior.dims if d != "family"]
        return self.posterior.sum(dims).to_series().rename("probability")

    def credible_set(self, mass: float | None = None) -> pd.DataFrame:
        """Highest-mass acquisition functions (gamma marginalised) up to ``mass`` (default 95%)."""
        mass = self.config.credible_mass if mass is None else mass
        m = self.marginal()
        df = m.to_dataframe(name="probability").reset_index()
        out = df[credible_cells(m.values, mass).ravel()]
        out = out.sort_values("probability", ascending=False, kind="stable").reset_index(drop=True)
        out["cumulative"] = out["probability"].cumsum()
        return out

    def gamma_marginal(self) -> xr.DataArray:
        dims = [d for d in self.posterior.dims if d != "gamma"]
        return self.posterior.sum(dims)

    def map_curve(self, delta_r1) -> np.ndarray:
        """theta*(delta_r1) of the MAP acquisition function."""
        m = self.map
        return self.tables.theta_star(m["family"], m["param"], delta_r1, tau=m["tau_pos"], tau_neg=m["tau_neg"])

    def log_predictive(self, delta_r1, theta2) -> np.ndarray:
        """Pointwise log density of held-out rounds under the MAP curve, MAP gamma and w_em.

        For ũ± each half uses the mean responsibility of its own half.
        """
        d = np.asarray(delta_r1, float)
        w = np.full(d.shape, self.w_em)
        if get_variant(self.model).split_by_sign:
            w = np.where(d < 0, self.w_em_half["neg"], self.w_em_half["pos"])
        return logpdf(theta2, self.map_curve(d), self.map["gamma"], w)

    def oos_loglik(self, delta_r1, theta2) -> float:
        """Held-out log-likelihood rounded as the paper does (2 decimals; per half for ũ±)."""
        lp = self.log_predictive(delta_r1, theta2)
        if not get_variant(self.model).split_by_sign:
            return round(float(lp.sum()), 2)
        neg = np.asarray(delta_r1) < 0
        return round(round(float(lp[neg].sum()), 2) + round(float(lp[~neg].sum()), 2), 2)


@dataclass(frozen=True)
class _KnotPairs:
    """Per delta_r1 knot j: the distinct (theta_a, theta_b) index pairs at knots (j, j+1)."""

    codes: np.ndarray  # concatenated pair codes a * n_theta + b, grouped by knot
    start: np.ndarray  # (D-1,) offset of each knot's group in ``codes``
    n_pairs: np.ndarray  # (D-1,) group sizes
    local: np.ndarray  # (C, D-1) index of each cell's pair within its knot's group


_PAIR_CACHE: dict = {}


def _knot_pairs(tables: ArgmaxTables, tau_index: tuple[int, ...]) -> _KnotPairs:
    key = (tables.config, id(tables.values), tau_index)
    if key in _PAIR_CACHE:
        return _PAIR_CACHE[key]
    theta = tables.config.theta
    nt = len(theta)
    idx = np.rint(tables.values[:, :, list(tau_index), :] / (theta[1] - theta[0])).astype(np.int64)
    idx = idx.reshape(-1, idx.shape[-1])  # (C, D)
    code = idx[:, :-1] * nt + idx[:, 1:]  # (C, D-1)
    D1 = code.shape[1]
    keyed = np.arange(D1)[None, :] * (nt * nt) + code
    uniq, inv = np.unique(keyed, return_inverse=True)
    knot = uniq // (nt * nt)
    n_pairs = np.bincount(knot, minlength=D1)
    start = np.r_[0, np.cumsum(n_pairs)[:-1]]
    local = inv.reshape(code.shape) - start[None, :]
    out = _KnotPairs(codes=uniq % (nt * nt), start=start, n_pairs=n_pairs, local=local)
    if len(_PAIR_CACHE) > 8:
        _PAIR_CACHE.clear()
    _PAIR_CACHE[key] = out
    return out


def _tie_ranks(families: tuple[str, ...]) -> np.ndarray:
    ranked = [f for f in TIE_ORDER if f in families] + [f for f in families if f not in TIE_ORDER]
    return np.array([ranked.index(f) for f in families])


def fit_paper_grid(
    delta_r1,
    theta2,
    model: str = "tau_pm",
    *,
    config: PaperGridConfig | None = None,
    tables: ArgmaxTables | None = None,
    subject: int | None = None,
) -> PaperGridFit:
    """Grid posterior and EM mixture weight for one subject's (training) rounds.

    EM alternates the grid's MAP cell (ties broken as the paper's code does) with each round's responsibility
    of the right-turn component, from responsibilities 0.5 until they move less than ``config.em_tol`` in all
    (or ``config.em_max_passes``); the posterior is the last pass's grid log-likelihood.
    """
    variant = get_variant(model)
    config = config or PaperGridConfig()
    tables = tables or load_tables(config.tables)
    d = np.asarray(delta_r1, float)
    x = np.asarray(theta2, float)
    taus = tables.config.tau
    # the unaugmented model has tau = 0 only
    tau_idx = np.arange(len(taus)) if variant.augmented else np.array([int(np.argmin(np.abs(taus)))])
    if variant.split_by_sign:
        neg = d < 0
        halves = {"neg": _Half(tables, tau_idx, d[neg], x[neg]), "pos": _Half(tables, tau_idx, d[~neg], x[~neg])}
    else:
        halves = {"all": _Half(tables, tau_idx, d, x)}

    weights = {h: np.full(half.n, 0.5) for h, half in halves.items()}
    new = {h: w.copy() for h, w in weights.items()}
    passes = 0
    while passes == 0 or (
        sum(np.abs(new[h] - weights[h]).sum() for h in halves) >= config.em_tol and passes < config.em_max_passes
    ):
        weights = new
        L, new, map_idx, map_ll = _em_pass(halves, weights, tables, tau_idx, config.gamma, variant.split_by_sign)
        passes += 1

    all_new = np.concatenate([new[h] for h in halves]) if len(d) else np.zeros(0)
    w_em = float(all_new.mean()) if len(all_new) else 0.5
    w_half = {h: (float(new[h].mean()) if len(new[h]) else 0.5) for h in halves}
    dims, coords = _grid_coords(tables, tau_idx, config.gamma, variant.split_by_sign)
    return PaperGridFit(
        model=variant.name,
        subject=subject,
        config=config,
        dims=dims,
        coords=coords,
        attrs={"model": variant.name, "subject": -1 if subject is None else subject},
        parts=L,
        map=_map_cell(tables, variant, tau_idx, config.gamma, map_idx, map_ll),
        w_em=w_em,
        w_em_half=w_half if variant.split_by_sign else {"neg": w_em, "pos": w_em},
        em_passes=passes,
        tables=tables,
    )


def _em_pass(halves: dict, weights: dict, tables: ArgmaxTables, tau_idx, gamma, split_by_sign: bool):
    """One EM pass: the grid log-likelihood of each half at these responsibilities, its MAP cell (grid indices)
    and log-likelihood, and the responsibilities under that cell."""
    F, P = tables.values.shape[:2]
    K, G = len(tau_idx), len(gamma)
    fam_rank = _tie_ranks(tables.config.families)
    tau_rank = -np.asarray(tau_idx).astype(float)  # larger tau first on ties
    L = {h: halves[h].loglik(gamma, weights[h]).reshape(F, P, K, G) for h in halves}
    if split_by_sign:
        f, p, kn, kp, g = _map_joint(L["neg"], L["pos"], fam_rank, tau_rank)
        new = {
            "neg": halves["neg"].responsibilities(np.ravel_multi_index((f, p, kn), (F, P, K)), gamma[g]),
            "pos": halves["pos"].responsibilities(np.ravel_multi_index((f, p, kp), (F, P, K)), gamma[g]),
        }
        return L, new, (f, p, kn, kp, g), float(L["neg"][f, p, kn, g] + L["pos"][f, p, kp, g])
    ll_full = L["all"]
    keys = [
        np.broadcast_to(fam_rank[:, None, None, None], ll_full.shape),
        np.broadcast_to(tau_rank[None, None, :, None], ll_full.shape),
        np.broadcast_to(np.arange(P)[None, :, None, None], ll_full.shape),
        np.broadcast_to(np.arange(G)[None, None, None, :], ll_full.shape),
    ]
    f, p, k, g = _pick_ordered(ll_full, keys)
    new = {"all": halves["all"].responsibilities(np.ravel_multi_index((f, p, k), (F, P, K)), gamma[g])}
    return L, new, (f, p, k, g), float(ll_full[f, p, k, g])


def _map_cell(tables: ArgmaxTables, variant, tau_idx, gamma, map_idx: tuple, map_ll: float) -> dict:
    """The MAP cell on the natural scale: family, its parameter, tau^- and tau^+, gamma, log-likelihood."""
    taus = tables.config.tau
    fam = tables.config.families[map_idx[0]]
    if variant.split_by_sign:
        tn, tp = taus[tau_idx[map_idx[2]]], taus[tau_idx[map_idx[3]]]
    elif variant.augmented:
        tn = tp = taus[tau_idx[map_idx[2]]]
    else:
        tn = tp = 0.0
    return {
        "family": fam,
        "param": float(tables.config.params(fam)[map_idx[1]]),
        "param_name": get_family(fam).param_name,
        "tau_neg": float(tn),
        "tau_pos": float(tp),
        "gamma": float(gamma[map_idx[-1]]),
        "loglik": map_ll,
    }


def _grid_coords(tables: ArgmaxTables, tau_idx, gamma, split_by_sign: bool) -> tuple[tuple, dict]:
    """The posterior grid's dims and coords (tau^- and tau^+ apart for ũ±)."""
    tc = tables.config
    taus = tc.tau
    coords = {
        "family": list(tc.families),
        "param_index": np.arange(tables.values.shape[1]),
        "param": (("family", "param_index"), tc.param_matrix),
        "gamma": gamma,
    }
    if split_by_sign:
        coords.update(tau_neg=taus[tau_idx], tau_pos=taus[tau_idx])
        return ("family", "param_index", "tau_neg", "tau_pos", "gamma"), coords
    coords.update(tau=taus[tau_idx])
    return ("family", "param_index", "tau", "gamma"), coords


def _map_joint(Ln: np.ndarray, Lp: np.ndarray, fam_rank: np.ndarray, tau_rank: np.ndarray) -> tuple:
    """MAP of the ũ± join ``Ln[f,p,kn,g] + Lp[f,p,kp,g]`` without forming it.

    Exact ties are broken in the order family, tau^-, parameter, gamma, tau^+.
    """
    mn = Ln.max(axis=2)
    mp = Lp.max(axis=2)
    tot = mn + mp
    best = tot.max()
    cands = []
    for f, p, g in np.argwhere(tot == best):
        for kn in np.flatnonzero(Ln[f, p, :, g] == mn[f, p, g]):
            for kp in np.flatnonzero(Lp[f, p, :, g] == mp[f, p, g]):
                cands.append((fam_rank[f], tau_rank[kn], p, g, tau_rank[kp], (f, p, kn, kp, g)))
    cands.sort(key=lambda c: c[:5])
    return tuple(int(v) for v in cands[0][5])


def _pick_ordered(ll: np.ndarray, keys: list[np.ndarray]) -> tuple:
    """Argmax with exact ties broken by ``keys`` (same shape as ``ll``, most significant first)."""
    best = ll.max()
    cand = np.argwhere(ll == best)
    if len(cand) == 1:
        return tuple(cand[0])
    ix = tuple(cand.T)
    order = np.lexsort([k[ix] for k in keys[::-1]])
    return tuple(cand[order[0]])


def sample_cells(fit: PaperGridFit, n: int, rng: np.random.Generator, family: str, param_range=None) -> dict:
    """Draws of grid values from a family's conditional grid posterior (for chain starts).

    Returns arrays ``param``, ``gamma`` and ``tau_neg``/``tau_pos`` (equal unless ũ±),
    each jittered uniformly within half a grid step and clipped to the grid.
    ``param_range`` (lo, hi) restricts the shape parameter to an interval (a
    stratum): nodes outside it get no mass, and draws are clipped into it.
    """
    k = list(fit.coords["family"]).index(family)
    params = fit.tables.config.params(family)
    gamma = fit.coords["gamma"]
    lo, hi = (params[0], params[-1]) if param_range is None else param_range
    keep = (params >= lo - 1e-12) & (params <= hi + 1e-12)
    if not keep.any():  # a stratum narrower than a grid step: its nearest node
        keep[np.argmin(np.abs(params - 0.5 * (lo + hi)))] = True
    log_keep = np.where(keep, 0.0, -np.inf)
    if get_variant(fit.model).split_by_sign:
        Ln, Lp = fit.parts["neg"][k], fit.parts["pos"][k]  # (P, K, G)
        mn, mp = Ln.max(axis=1, keepdims=True), Lp.max(axis=1, keepdims=True)
        en, ep = np.exp(Ln - mn), np.exp(Lp - mp)
        sn, sp = en.sum(axis=1), ep.sum(axis=1)  # (P, G)
        logm = np.log(sn) + np.log(sp) + mn[:, 0] + mp[:, 0] + log_keep[:, None]
        pg = np.exp(logm - logm.max()).ravel()
        cells = rng.choice(pg.size, size=n, p=pg / pg.sum())
        ip, ig = np.unravel_index(cells, logm.shape)
        taus = fit.coords["tau_neg"]
        kn = np.array([rng.choice(len(taus), p=en[a, :, b] / sn[a, b]) for a, b in zip(ip, ig)])
        kp = np.array([rng.choice(len(taus), p=ep[a, :, b] / sp[a, b]) for a, b in zip(ip, ig)])
        tn, tp = taus[kn], taus[kp]
    else:
        post = fit.posterior.values[k] * keep[:, None, None]  # (P, K, G)
        if post.sum() <= 0:
            post = np.ones_like(post) * keep[:, None, None]
        flat = post.ravel() / post.sum()
        cells = rng.choice(flat.size, size=n, p=flat)
        ip, kk, ig = np.unravel_index(cells, post.shape)
        taus = fit.coords["tau"]
        tn = tp = taus[kk]

    def jitter(v, grid):
        if len(grid) < 2:
            return np.asarray(v, float)
        step = grid[1] - grid[0]
        return np.clip(v + rng.uniform(-0.5, 0.5, len(v)) * step, grid[0], grid[-1])

    tn = jitter(tn, taus)
    tp = tn if not get_variant(fit.model).split_by_sign else jitter(tp, taus)
    param = np.clip(jitter(params[ip], params), lo, hi)
    return {"param": param, "gamma": jitter(gamma[ig], gamma), "tau_neg": tn, "tau_pos": tp}
