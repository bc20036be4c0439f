"""Figures of the forward model (paper Figs 4-6 and 9).

* :func:`plot_click_region_surface` -- an acquisition function over the click
  region around move 1 for one delta_r1, with its argmax on the boundary.
* :func:`plot_acquisition_surface` -- acquisition values over (delta_r1, theta)
  on the click-region boundary, with the argmax curve (and, for tau > 0, the
  unaugmented curve dashed).
* :func:`plot_acquisition_curves` -- families of acquisition curves theta*(delta_r1).

Every function returns the matplotlib ``Figure`` and accepts an ``ax`` to draw into.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ibo_pymc.tasks.hotspot.forward.acquisition import get_family, incumbent
from ibo_pymc.tasks.hotspot.forward.argmax import argmax_curve
from ibo_pymc.tasks.hotspot.forward.augmentation import augment
from ibo_pymc.tasks.hotspot.forward.surrogate import Surrogate

FAMILY_COLOURS = {"PI": "tab:green", "EI": "tab:blue", "UCB": "tab:red"}


def _axes(ax, **kw):
    if ax is None:
        fig, ax = plt.subplots(**kw)
        return fig, ax
    return ax.figure, ax


def plot_click_region_surface(
    family: str, param: float, delta_r1: float, *, surrogate: Surrogate | None = None, n: int = 161, ax=None
):
    """Acquisition values over the disc of radius 20 around move 1 (rotated frame)."""
    s = surrogate or Surrogate()
    fam = get_family(family)
    r = s.click_radius
    g = np.linspace(-r, r, n)
    X, Y = np.meshgrid(g + r, g)
    inside = (X - r) ** 2 + Y**2 <= r**2
    mu, sd = s.predict_at(np.stack([X, Y], -1), delta_r1)
    v = np.where(inside, fam.value(mu, sd, incumbent(delta_r1), param), np.nan)
    fig, ax = _axes(ax, figsize=(4.6, 4))
    im = ax.pcolormesh(X, Y, v, shading="auto", cmap="viridis")
    fig.colorbar(im, ax=ax, label=f"{family}({fam.param_name}={param:g})")
    t = argmax_curve(family, param, delta_r1)
    for sign in (1, -1):
        ax.plot(r + r * np.cos(sign * t), r * np.sin(sign * t), "o", color="w", mec="k", ms=8)
    ax.plot([0, r], [0, 0], "k-", lw=1)
    ax.plot([0], [0], "ks", ms=5)
    ax.set_aspect("equal")
    ax.set_xlabel("x (px, move-1 direction)")
    ax.set_ylabel("y (px)")
    ax.set_title(f"Δr1 = {delta_r1:g}: argmax θ* = ±{float(t):.2f}")
    return fig


def plot_acquisition_surface(
    family: str,
    param: float,
    *,
    tau: float = 0.0,
    tau_neg: float | None = None,
    delta_r1=None,
    theta=None,
    rule: str = "reference",
    ax=None,
):
    """Acquisition values over (delta_r1, theta in [-pi, pi]) with the argmax curve(s)."""
    s = Surrogate()
    fam = get_family(family)
    d = np.linspace(-34, 34, 137) if delta_r1 is None else np.asarray(delta_r1, float)
    th = np.linspace(0, np.pi, 180) if theta is None else np.asarray(theta, float)
    mu, sd = s.predict_grid(th, d)
    v = fam.value(mu, sd, incumbent(d)[:, None], param)
    if tau or tau_neg:
        taus = np.where(d < 0, tau if tau_neg is None else tau_neg, tau)
        v = np.stack([augment(v[i], th, taus[i], d[i], rule) for i in range(len(d))]) if len(d) else v
    full = np.concatenate([v[:, :0:-1], v], axis=1)
    th_full = np.concatenate([-th[:0:-1], th])
    fig, ax = _axes(ax, figsize=(5.5, 4))
    im = ax.pcolormesh(d, th_full, full.T, shading="auto", cmap="viridis")
    fig.colorbar(im, ax=ax, label=f"{family}({fam.param_name}={param:g})")
    curve = argmax_curve(family, param, d, tau=tau, negative_tau=tau_neg, theta=th, rule=rule)
    for sign in (1, -1):
        ax.plot(d, sign * curve, color="lime", lw=2)
    if tau or tau_neg:
        base = argmax_curve(family, param, d, theta=th)
        for sign in (1, -1):
            ax.plot(d, sign * base, color="lime", lw=1.5, ls="--")
    ax.set_xlabel("Δr1 (move-1 score change)")
    ax.set_ylabel("θ (move-2 angle, rad)")
    ax.set_ylim(-np.pi, np.pi)
    return fig


def plot_acquisition_curves(family: str, params, *, tau: float = 0.0, delta_r1=None, ax=None):
    """theta*(delta_r1) for several parameter values of one family (paper Fig 6)."""
    d = np.linspace(-34, 34, 273) if delta_r1 is None else np.asarray(delta_r1, float)
    fam = get_family(family)
    fig, ax = _axes(ax, figsize=(5, 3.6))
    cmap = plt.get_cmap("viridis")
    params = list(params)
    for k, p in enumerate(params):
        ax.plot(
            d,
            argmax_curve(family, p, d, tau=tau),
            color=cmap(k / max(1, len(params) - 1)),
            label=f"{fam.param_name} = {p:g}",
        )
    ax.set_xlabel("Δr1")
    ax.set_ylabel("θ* (rad)")
    ax.set_ylim(-0.05, np.pi + 0.05)
    ax.set_title(f"{family} acquisition curves" + (f", τ = {tau:.2f}" if tau else ""))
    ax.legend(fontsize=8)
    return fig
