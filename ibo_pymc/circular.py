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


def wrapped_cauchy_mixture_logpdf(x, theta_star, gamma, w):
    """Log-density of the symmetric two-component mixture (SPEC section 5).

    ``w`` weighs the component at ``+theta_star`` (the rightward turn), ``1 - w``
    the one at ``-theta_star``. Computed stably as a log-sum-exp of the two
    component log-densities.
    """
    x = np.asarray(x, dtype=float)
    theta_star = np.asarray(theta_star, dtype=float)
    gamma = np.asarray(gamma, dtype=float)
    w = np.asarray(w, dtype=float)
    # cosh(g) - cos(d) = 2 (sinh(g/2)^2 + sin(d/2)^2): no cancellation for small g, d.
    log_norm = np.log(np.sinh(gamma)) - np.log(4.0 * np.pi)
    sh2 = np.sinh(gamma / 2.0) ** 2
    lp = log_norm - np.log(sh2 + np.sin((x - theta_star) / 2.0) ** 2)
    lm = log_norm - np.log(sh2 + np.sin((x + theta_star) / 2.0) ** 2)
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(w) + lp, np.log1p(-w) + lm)
