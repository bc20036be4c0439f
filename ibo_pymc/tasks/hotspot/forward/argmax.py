"""Argmax curves and their lookup tables (docs: explanation/paper-grid).

The acquisition curve of a function u is ``theta*(delta_r1)``, the angle on
[0, pi] that maximises u on the click-region boundary (the problem is symmetric
in theta, so the mirrored angle ``-theta*`` is the other argmax). The tables
hold ``theta*`` for every family, shape-parameter grid value, tau and delta_r1
of a :class:`TableConfig`; the default configuration is the reference grid that
produced the published numbers, and the only definition of the tables:

======================  ==================================================
delta_r1                -34 .. 34 step 0.5 (137 values)
theta (argmax search)   linspace(0, pi, 180); ties take the first
xi (PI, EI), p (UCB)    linspace over the family's bounds, 61 values
tau                     pi/2 - linspace(0, pi/2, 30), stored ascending
augmentation rule       ``"reference"`` (see :mod:`ibo_pymc.tasks.hotspot.forward.augmentation`)
======================  ==================================================

``tau = 0`` is the unaugmented function u. Tables are built vectorised (well
under a second for the reference grid). With the default configuration they
equal the reference code's saved argmax grids (``acquisition_grid.rds`` and the
30 grids of ``acquisition_grid_threshold.rds``) in every cell, for PI, true EI
and UCB (``tests/test_reference.py``). Tables are cached in memory and on disk
under the per-user cache keyed by a hash of the configuration.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import special

from ibo_pymc.tasks.hotspot.forward.acquisition import (
    PAPER_FAMILIES,
    AcquisitionFamily,
    get_family,
    incumbent,
)
from ibo_pymc.tasks.hotspot.forward.augmentation import RULES, allowed_window
from ibo_pymc.tasks.hotspot.forward.surrogate import Surrogate

#: Bumped whenever the way tables are computed changes (invalidates disk caches).
TABLE_FORMAT = 2  # 2: EI scored without overflow for z > 37 (was +inf, ties took the first angle)


@dataclass(frozen=True)
class TableConfig:
    """Resolution and model constants of the argmax tables. Hashable; the cache key."""

    families: tuple[str, ...] = PAPER_FAMILIES
    n_param: int = 61
    delta_r1_min: float = -34.0
    delta_r1_max: float = 34.0
    delta_r1_step: float = 0.5
    n_theta: int = 180
    n_tau: int = 30
    rule: str = "reference"
    sigma_s: float = 0.01
    sigma_beta: float = 1.0
    click_radius: float = 20.0
    #: extra families registered by the user are keyed by their name and bounds
    family_bounds: tuple[tuple[float, float], ...] = field(default=(), compare=True)

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"unknown augmentation rule {self.rule!r}; expected one of {RULES}")
        if self.n_param < 2 or self.n_theta < 3 or self.n_tau < 1:
            raise ValueError("n_param >= 2, n_theta >= 3 and n_tau >= 1 are required")
        if not self.family_bounds:
            object.__setattr__(self, "family_bounds", tuple(tuple(get_family(f).bounds) for f in self.families))

    # --- grids -----------------------------------------------------------------
    @property
    def delta_r1(self) -> np.ndarray:
        n = int(round((self.delta_r1_max - self.delta_r1_min) / self.delta_r1_step)) + 1
        return self.delta_r1_min + self.delta_r1_step * np.arange(n)

    @property
    def theta(self) -> np.ndarray:
        return np.linspace(0.0, np.pi, self.n_theta)

    @property
    def tau(self) -> np.ndarray:
        """Ascending tau grid ``(pi/2 - linspace(0, pi/2, n_tau))[::-1]`` (0 first)."""
        if self.n_tau == 1:
            return np.zeros(1)
        return (np.pi / 2 - np.linspace(0.0, np.pi / 2, self.n_tau))[::-1]

    def params(self, family: str) -> np.ndarray:
        lo, hi = self.family_bounds[self.families.index(family)]
        return np.linspace(lo, hi, self.n_param)

    @property
    def param_matrix(self) -> np.ndarray:
        """(family, param_index) array of every family's parameter grid."""
        return np.stack([self.params(f) for f in self.families])

    @property
    def surrogate(self) -> Surrogate:
        return Surrogate(self.sigma_s, self.sigma_beta, self.click_radius)

    def to_dict(self) -> dict:
        """Plain data; user-registered families travel inside it (``user_families``, see
        :func:`~ibo_pymc.tasks.hotspot.forward.acquisition.family_payload`), so a saved fit or a fresh worker
        process rebuilds them without the user's registration code."""
        from ibo_pymc.tasks.hotspot.forward.acquisition import (
            BUILTIN_FAMILIES,
            family_payload,
        )

        d = dataclasses.asdict(self)
        d["families"] = list(self.families)
        d["family_bounds"] = [list(b) for b in self.family_bounds]
        user = {f: family_payload(f) for f in self.families if f not in BUILTIN_FAMILIES}
        if user:
            d["user_families"] = user
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TableConfig:
        from ibo_pymc.tasks.hotspot.forward.acquisition import restore_family

        d = dict(d)
        for payload in d.pop("user_families", {}).values():
            restore_family(payload)
        if d.pop("ei_as_pi", False):  # an option of earlier versions, now removed
            raise ValueError("these tables were made with EI scored by the PI formula, which no longer exists; refit")
        d["families"] = tuple(d["families"])
        d["family_bounds"] = tuple(tuple(b) for b in d.get("family_bounds", ()))
        return cls(**d)

    def key(self) -> str:
        """The tables' cache key: the configuration, the table format, and what each family computes
        (:func:`~ibo_pymc.tasks.hotspot.forward.acquisition.family_fingerprint`), so an edited or re-registered
        family never reuses stale tables."""
        from ibo_pymc.tasks.hotspot.forward.acquisition import family_fingerprint

        d = self.to_dict()
        d.pop("user_families", None)  # their code is in the fingerprints
        payload = json.dumps(
            {"format": TABLE_FORMAT, **d, "family_code": [family_fingerprint(f) for f in self.families]}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def argmax_curve(
    family: str | AcquisitionFamily,
    param,
    delta_r1,
    *,
    tau=0.0,
    theta=None,
    rule: str = "reference",
    surrogate: Surrogate | None = None,
    negative_tau=None,
) -> np.ndarray:
    """theta*(delta_r1) of one family at the given parameter(s) by grid search.

    ``param`` may be an array (returns ``param.shape + delta_r1.shape``).
    ``negative_tau`` (ũ±) replaces ``tau`` for ``delta_r1 < 0``.
    """
    fam = get_family(family)
    surrogate = surrogate or Surrogate()
    theta = np.linspace(0, np.pi, 180) if theta is None else np.asarray(theta, float)
    d = np.atleast_1d(np.asarray(delta_r1, float))
    p = np.asarray(param, float)
    mean, sd = surrogate.predict_grid(theta, d)
    vals = fam.score(mean, sd, incumbent(d)[:, None], p.reshape(p.shape + (1, 1)))  # (*P, D, T)
    neg = d < 0
    taus = np.where(neg, tau if negative_tau is None else negative_tau, tau)
    lo, hi = allowed_window(theta, taus, neg, rule)
    out = theta[_argmax_in_windows(vals, lo, hi)]
    return out.reshape(p.shape + np.shape(delta_r1))


def _argmax_in_windows(vals: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Index of the maximum of ``vals[..., d, lo[d]:hi[d]+1]`` for every delta_r1 ``d``.

    ``vals`` has the delta_r1 axis second to last and the angle last; the windows
    are inclusive index bounds. Rounds sharing a window are searched together.
    """
    out = np.empty(vals.shape[:-1], dtype=np.int64)
    for a, b in np.unique(np.stack([lo, hi], axis=1), axis=0):
        sel = (lo == a) & (hi == b)
        out[..., sel] = np.argmax(vals[..., sel, a : b + 1], axis=-1) + a
    return out


def _build(config: TableConfig) -> np.ndarray:
    theta, d, taus = config.theta, config.delta_r1, config.tau
    mean, sd = config.surrogate.predict_grid(theta, d)
    fbest = incumbent(d)[:, None]
    lo, hi = allowed_window(theta, taus[:, None], (d < 0)[None, :], config.rule)  # (K, D)
    out = np.empty((len(config.families), config.n_param, len(taus), len(d)))
    for fi, name in enumerate(config.families):
        fam = get_family(name)
        params = config.params(name)
        vals = fam.score(mean[None], sd[None], fbest[None], params[:, None, None])  # (P, D, T)
        vals = np.ascontiguousarray(vals)
        for k in range(len(taus)):
            out[fi, :, k, :] = theta[_argmax_in_windows(vals, lo[k], hi[k])]
    return out


@dataclass(frozen=True)
class ArgmaxTables:
    """theta* for every (family, parameter, tau, delta_r1) of a configuration.

    ``data`` is an :class:`xarray.DataArray` with dims
    ``(family, param_index, tau, delta_r1)`` and a 2-D coordinate ``param``
    (family, param_index) holding each family's parameter values.
    """

    config: TableConfig
    values: np.ndarray  # (F, P, K, D)

    @property
    def data(self) -> xr.DataArray:
        c = self.config
        return xr.DataArray(
            self.values,
            dims=("family", "param_index", "tau", "delta_r1"),
            coords={
                "family": list(c.families),
                "param": (("family", "param_index"), c.param_matrix),
                "param_name": ("family", [get_family(f).param_name for f in c.families]),
                "tau": c.tau,
                "delta_r1": c.delta_r1,
            },
            name="theta_star",
            attrs={"units": "rad", "config": json.dumps(c.to_dict()), "format": TABLE_FORMAT},
        )

    def family_index(self, family: str) -> int:
        try:
            return self.config.families.index(family)
        except ValueError:
            raise KeyError(f"family {family!r} is not in these tables ({', '.join(self.config.families)})") from None

    def table(self, family: str) -> np.ndarray:
        """(param, tau, delta_r1) array of one family."""
        return self.values[self.family_index(family)]

    # --- interpolation ---------------------------------------------------------
    def delta_r1_weights(self, delta_r1) -> tuple[np.ndarray, np.ndarray]:
        """Left knot index and weight of the right knot for linear interpolation in delta_r1.

        Values outside the grid are held at the edge (constant extrapolation).
        """
        c = self.config
        x = np.clip(np.asarray(delta_r1, float), c.delta_r1_min, c.delta_r1_max)
        pos = (x - c.delta_r1_min) / c.delta_r1_step
        n = len(c.delta_r1)
        i = np.clip(np.floor(pos).astype(int), 0, n - 2)
        return i, pos - i

    def at_delta_r1(self, delta_r1) -> np.ndarray:
        """theta* at observed delta_r1 for every grid cell: shape (F, P, K, N).

        Linear in delta_r1 between the grid knots; since 0 is a knot, a negative
        delta_r1 only uses knots <= 0 and a positive one knots >= 0, as the
        reference does for the two halves of ũ±.
        """
        i, w = self.delta_r1_weights(delta_r1)
        v = self.values
        return v[..., i] * (1.0 - w) + v[..., i + 1] * w

    def theta_star(self, family: str, param, delta_r1, tau=0.0, tau_neg=None) -> np.ndarray:
        """theta* by linear interpolation in (parameter, tau, delta_r1); broadcasts its inputs.

        ``tau_neg`` (ũ±) is used where ``delta_r1 < 0``.
        """
        c = self.config
        tab = self.table(family)
        params = c.params(family)
        d = np.asarray(delta_r1, float)
        t = np.where(d < 0, tau if tau_neg is None else tau_neg, tau)
        p, t, d = np.broadcast_arrays(np.asarray(param, float), np.asarray(t, float), d)
        ip, wp = _knots(params, p)
        it, wt = _knots(c.tau, t) if len(c.tau) > 1 else (np.zeros(p.shape, int), np.zeros(p.shape))
        idd, wd = self.delta_r1_weights(d)
        out = np.zeros(p.shape)
        for a, fa in ((0, 1 - wp), (1, wp)):
            for b, fb in ((0, 1 - wt), (1, wt)):
                tb = np.minimum(it + b, len(c.tau) - 1)
                for e, fe in ((0, 1 - wd), (1, wd)):
                    out += fa * fb * fe * tab[ip + a, tb, idd + e]
        return out


def _knots(grid: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.clip(x, grid[0], grid[-1])
    i = np.clip(np.searchsorted(grid, x, side="right") - 1, 0, len(grid) - 2)
    w = (x - grid[i]) / (grid[i + 1] - grid[i])
    return i, w


def build_tables(config: TableConfig | None = None) -> ArgmaxTables:
    """Compute the argmax tables of a configuration (no caching)."""
    config = config or TableConfig()
    return ArgmaxTables(config, _build(config))


_MEMORY: dict[TableConfig, ArgmaxTables] = {}


def table_cache_dir() -> Path:
    from ibo_pymc.cache import tables_dir

    return tables_dir()


def load_tables(config: TableConfig | None = None, *, cache: bool = True) -> ArgmaxTables:
    """The argmax tables of ``config``: from memory, else the disk cache, else built and cached."""
    config = config or TableConfig()
    if config in _MEMORY:
        return _MEMORY[config]
    path = table_cache_dir() / f"argmax-{config.key()}.npy"
    tables = None
    if cache and path.is_file():
        try:
            values = np.load(path, allow_pickle=False)
            expected = (len(config.families), config.n_param, len(config.tau), len(config.delta_r1))
            if values.shape == expected:
                tables = ArgmaxTables(config, values)
        except (OSError, ValueError):
            tables = None
    if tables is None:
        tables = build_tables(config)
        if cache:
            try:
                from ibo_pymc.io import atomic_path

                with atomic_path(path) as tmp, open(tmp, "wb") as fh:
                    np.save(fh, tables.values, allow_pickle=False)
            except OSError:
                pass  # a read-only cache only costs a rebuild
    _MEMORY[config] = tables
    return tables


# --- closed forms ------------------------------------------------------------------


def closed_form_theta_star(family: str, param, delta_r1) -> np.ndarray:
    """Exact argmax of the unaugmented UCB and PI on the circle (up to the tiny sigma_s terms).

    UCB(p): ``atan2(20 z_p, delta_r1)``; PI(xi): ``acos(delta_r1 / xi)`` for
    ``0 <= delta_r1 < xi``, ``acos(delta_r1 / (xi - delta_r1))`` for
    ``delta_r1 < 0``, and 0 once ``xi <= delta_r1``.
    """
    d = np.asarray(delta_r1, float)
    p = np.asarray(param, float)
    p, d = np.broadcast_arrays(p, d)
    if family == "UCB":
        return np.arctan2(20.0 * special.ndtri(p), d)
    if family == "PI":
        with np.errstate(divide="ignore", invalid="ignore"):
            pos = np.arccos(np.clip(np.where(p > 0, d / p, 1.0), -1, 1))
            neg = np.arccos(np.clip(d / (p - d), -1, 1))
        return np.where(d < 0, neg, np.where(d < p, pos, 0.0))
    raise ValueError(f"no closed form for family {family!r} (available: UCB, PI)")
