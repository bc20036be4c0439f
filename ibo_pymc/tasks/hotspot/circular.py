"""Small circular utilities shared by the data layer, the models and the plots."""

from __future__ import annotations

import numpy as np


def wrap_angle(x):
    """Wrap angles (radians) to the interval (-pi, pi]."""
    x = np.asarray(x, dtype=float)
    out = np.pi - np.mod(np.pi - x, 2.0 * np.pi)
    # np.mod can round a value one ulp below 2 pi up to 2 pi, giving -pi: fold it back
    return np.where(out <= -np.pi, out + 2.0 * np.pi, out)


def wrapped_cauchy_pdf(x, mu, gamma):
    """Wrapped Cauchy density with location ``mu`` and scale ``gamma`` (rho = exp(-gamma)).

    ``sinh(gamma) / (2 pi (cosh(gamma) - cos(x - mu)))``.
    """
    x, mu, gamma = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x, mu, gamma)))
    return np.sinh(gamma) / (2.0 * np.pi * (np.cosh(gamma) - np.cos(x - mu)))
