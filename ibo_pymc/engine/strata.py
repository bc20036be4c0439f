"""Strata: splitting a component whose conditional posterior has separated modes.

When a component's chains disagree, its pooled draws show the gap between the
modes; :func:`split_point` finds it, and the component is split there into two
strata, each sampled with its prior restricted to its side and weighted by its
bridge-sampled evidence and its share of the prior. The hotspot task's joint
run splits its own components (``split_component``); for every other task the
engine's per-family plan splits a family into :class:`Stratum` components,
each sampled on a :class:`RestrictedDensity`, and merges them back into the
family's conditional posterior before assembly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ibo_pymc.engine.density import Density


def split_point(draws: dict, bounds: dict, bins: int = 40, depth: float = 0.2, min_share: float = 0.02):
    """Where to split a component whose chains disagree: ``(name, value)`` or ``None``.

    For each parameter, the pooled draws are binned (``bins`` over the range of
    the draws, three-bin running mean) and the bin is found where the count,
    relative to the lower of the highest counts on either side, is smallest.
    The parameter with the deepest such dip is split at its centre if the dip
    is below ``depth`` and each side holds at least ``min_share`` of the draws;
    otherwise the draws show no separated modes and ``None`` is returned.
    """
    best = (depth, None)
    for name, v in draws.items():
        v = np.asarray(v, float).ravel()
        lo, hi = v.min(), v.max()
        if not hi > lo:
            continue
        counts, edges = np.histogram(v, bins=bins, range=(lo, hi))
        m = np.convolve(counts, np.ones(3) / 3, mode="same")
        cum = np.cumsum(counts) / len(v)
        for j in range(2, bins - 2):
            if cum[j - 1] < min_share or 1 - cum[j] < min_share:
                continue
            ratio = m[j] / min(m[:j].max(), m[j + 1 :].max())
            at = 0.5 * (edges[j] + edges[j + 1])
            if ratio < best[0] and bounds[name][0] < at < bounds[name][1]:
                best = (ratio, (name, float(at)))
    return best[1]


@dataclass(frozen=True)
class Stratum:
    """A family with its prior restricted to a box on the unconstrained scale: ``limits`` maps a parameter to
    ``(a, b)`` (either end may be infinite); ``index`` of ``n`` strata of the family."""

    family: str
    limits: tuple  # ((name, a, b), ...)
    index: int = 0
    n: int = 1

    @property
    def label(self) -> str:
        return f"{self.family}[{self.index + 1}/{self.n}]"

    def key(self) -> int:
        """A stable integer of the stratum's family and box (its density and seed stream are keyed by it, so that
        numbering the strata again after a further split changes neither)."""
        import hashlib

        text = repr((self.family, tuple((n, float(a), float(b)) for n, a, b in sorted(self.limits))))
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")

    def interval(self, name: str) -> tuple[float, float]:
        for n, a, b in self.limits:
            if n == name:
                return a, b
        return -math.inf, math.inf

    def split(self, name: str, at: float) -> tuple[Stratum, Stratum]:
        """The two strata either side of ``at`` in ``name`` (their indices set by :func:`renumber`)."""
        a, b = self.interval(name)
        rest = tuple(lim for lim in self.limits if lim[0] != name)
        return Stratum(self.family, (*rest, (name, a, float(at)))), Stratum(self.family, (*rest, (name, float(at), b)))

    def to_json(self) -> dict:
        return {"label": self.label, "limits": {n: [_finite_or_none(a), _finite_or_none(b)] for n, a, b in self.limits}}


def expit(x):
    """The logistic sigmoid (SciPy's, imported when a stratum is first used)."""
    from scipy.special import expit as _expit

    return _expit(x)


def _finite_or_none(v: float):
    return float(v) if math.isfinite(v) else None


def renumber(comps: list) -> list:
    """The components with each family's strata numbered ``index`` of ``n`` in their order."""
    out = []
    for c in comps:
        if isinstance(c, Stratum):
            same = [d for d in comps if isinstance(d, Stratum) and d.family == c.family]
            c = Stratum(c.family, c.limits, same.index(c), len(same))
        out.append(c)
    return out


class RestrictedDensity(Density):
    """A family's density with its prior restricted to a stratum's box and renormalised there, on a scale that
    maps the box onto the real line: each limited coordinate z in (a, b) is ``a + (b - a) sigmoid(w)``
    (``a + exp(w)`` or ``b - exp(w)`` where one end is infinite), with the map's Jacobian.

    Why renormalised: a stratum's bridge-sampled evidence is then the evidence under its own (restricted) prior,
    and the family's is the sum of the strata's weighted by their prior shares (:meth:`log_share`), as for the
    hotspot task's uniform strata. NUTS samples it through the Python callback (:func:`pyfunc_nutpie_model`) on
    the family's exact density: strata are rare, so the compiled fast path is not worth a second kernel.
    """

    def __init__(self, base: Density, priors: dict, stratum: Stratum):
        self.base, self.stratum = base, stratum
        self.names = tuple(base.names)
        self._limits = [(self.names.index(n), float(a), float(b)) for n, a, b in stratum.limits]
        self._log_share = sum(priors[n].log_mass_unconstrained(a, b) for n, a, b in stratum.limits)

    @property
    def log_share(self) -> float:
        """log of the stratum's share of the family's prior (the prior mass of its box)."""
        return self._log_share

    def to_base(self, w: np.ndarray) -> np.ndarray:
        """The family's unconstrained coordinates of points ``w`` (..., dim) of the stratum's scale."""
        z = np.array(w, float, copy=True)
        with np.errstate(over="ignore"):  # beyond exp's range: an infinite z, a non-finite density, rejected
            self._map(np.asarray(w, float), z)
        return z

    def _map(self, w, z):
        """Write each limited coordinate's map of ``w`` into ``z``."""
        for i, a, b in self._limits:
            if math.isfinite(a) and math.isfinite(b):
                z[..., i] = a + (b - a) * expit(w[..., i])
            elif math.isfinite(a):
                z[..., i] = a + np.exp(w[..., i])
            elif math.isfinite(b):
                z[..., i] = b - np.exp(w[..., i])

    def from_base(self, z: np.ndarray) -> np.ndarray:
        """The stratum's coordinates of points ``z`` of the family's scale (strictly inside the box)."""
        w = np.array(z, float, copy=True)
        for i, a, b in self._limits:
            if math.isfinite(a) and math.isfinite(b):
                u = np.clip((z[..., i] - a) / (b - a), 1e-9, 1 - 1e-9)
                w[..., i] = np.log(u) - np.log1p(-u)
            elif math.isfinite(a):
                w[..., i] = np.log(np.maximum(z[..., i] - a, 1e-300))
            elif math.isfinite(b):
                w[..., i] = np.log(np.maximum(b - z[..., i], 1e-300))
        return w

    def _log_jacobian(self, w):
        out = -self._log_share
        for i, a, b in self._limits:
            x = w[..., i]
            if math.isfinite(a) and math.isfinite(b):
                out = out + math.log(b - a) - np.logaddexp(0.0, x) - np.logaddexp(0.0, -x)
            elif math.isfinite(a) or math.isfinite(b):
                out = out + x
        return out

    def value(self, w: np.ndarray) -> np.ndarray:
        w = np.atleast_2d(np.asarray(w, float))
        return self.base.value(self.to_base(w)) + self._log_jacobian(w)

    def value_and_grad(self, w):
        w = np.asarray(w, float)
        v, g = self.base.value_and_grad(self.to_base(w))
        g = np.array(g, float, copy=True)
        with np.errstate(over="ignore"):  # a w beyond exp's range gives a non-finite value, which samplers reject
            for i, a, b in self._limits:
                x = w[i]
                if math.isfinite(a) and math.isfinite(b):
                    s = expit(x)
                    g[i] = g[i] * (b - a) * s * (1 - s) + (1 - 2 * s)
                elif math.isfinite(a):
                    g[i] = g[i] * np.exp(x) + 1
                elif math.isfinite(b):
                    g[i] = -g[i] * np.exp(x) + 1
        return float(v + self._log_jacobian(w)), g
