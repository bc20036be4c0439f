"""The tau augmentation of acquisition functions (paper eqs 4.7-4.8).

An augmented function gives every angle that is not "sufficiently exploratory"
the minimum acquisition value, so the argmax is searched over the allowed angles
only. Two rules are available:

``"paper"``
    the paper's definition: for ``delta_r1 >= 0`` an angle is allowed if
    ``|theta| > tau``; for ``delta_r1 < 0`` if ``|theta| < pi - tau``.
``"reference"``
    what produced the published tables: the allowed set is
    ``tau <= |theta| <= pi - tau`` for both signs, with both bounds snapped to
    the nearest angle of the search grid (ties to the lower angle). For PI, EI
    and UCB the two agree up to the snapping, because their unaugmented argmax
    never lies on the far side.

For ũ± the same rule is applied with ``tau^-`` when ``delta_r1 < 0`` and
``tau^+`` when ``delta_r1 >= 0``.

On a search grid ``theta_grid`` (increasing, covering [0, pi]) each rule gives,
per (tau, sign of delta_r1), one contiguous window of allowed indices; the
argmax is taken inside that window (disallowed angles never win, even when the
allowed values tie with the minimum).
"""

from __future__ import annotations

import numpy as np

RULES = ("reference", "paper")


def _nearest_index(grid: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of the grid value nearest to each x (first one on ties)."""
    return np.argmin(np.abs(grid[None, :] - np.asarray(x, float)[:, None]), axis=1)


def allowed_window(theta_grid, tau, negative, rule: str = "reference") -> tuple[np.ndarray, np.ndarray]:
    """Inclusive index bounds ``(lo, hi)`` of the allowed angles.

    ``tau`` and ``negative`` (whether delta_r1 < 0) broadcast; returns integer arrays.
    """
    theta_grid = np.asarray(theta_grid, float)
    tau, negative = np.broadcast_arrays(np.asarray(tau, float), np.asarray(negative, bool))
    shape = tau.shape
    tau = tau.ravel()
    negative = negative.ravel()
    n = len(theta_grid)
    if rule == "reference":
        lo = _nearest_index(theta_grid, tau)
        hi = _nearest_index(theta_grid, np.pi - tau)
    elif rule == "paper":
        # dr1 >= 0: theta > tau (strict), dr1 < 0: theta < pi - tau (strict); tau = 0 leaves all allowed
        first_above = np.searchsorted(theta_grid, tau, side="right")
        last_below = np.searchsorted(theta_grid, np.pi - tau, side="left") - 1
        lo = np.where(negative | (tau <= 0), 0, first_above)
        hi = np.where(~negative | (tau <= 0), n - 1, last_below)
    else:
        raise ValueError(f"unknown augmentation rule {rule!r}; expected one of {RULES}")
    lo = np.clip(lo, 0, n - 1)
    hi = np.clip(np.maximum(hi, lo), 0, n - 1)
    return lo.reshape(shape), hi.reshape(shape)


def allowed_mask(theta_grid, tau, delta_r1, rule: str = "reference") -> np.ndarray:
    """Boolean mask of allowed angles, shape ``broadcast(tau, delta_r1).shape + (len(theta_grid),)``."""
    theta_grid = np.asarray(theta_grid, float)
    lo, hi = allowed_window(theta_grid, tau, np.asarray(delta_r1, float) < 0, rule)
    idx = np.arange(len(theta_grid))
    return (idx >= lo[..., None]) & (idx <= hi[..., None])


def augment(values, theta_grid, tau, delta_r1, rule: str = "reference") -> np.ndarray:
    """The augmented acquisition values: disallowed angles get the minimum value.

    ``values`` has the angle on its last axis; the minimum is taken over angles
    and delta_r1 (all of ``values``), as in the paper.
    """
    values = np.asarray(values, float)
    mask = allowed_mask(theta_grid, tau, delta_r1, rule)
    return np.where(mask, values, values.min())
