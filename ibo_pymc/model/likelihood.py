"""The wrapped-Cauchy mixture in PyTensor, as a PyMC distribution (SPEC section 5).

theta2 of a round is drawn from ``w WC(theta*, gamma) + (1 - w) WC(-theta*, gamma)``
with the wrapped Cauchy density ``sinh(g) / (2 pi (cosh g - cos(x - mu)))``.

Numerics: with ``cosh g - cos d = 2 (sinh^2(g/2) + sin^2(d/2))`` the log-density is

    log(sinh g / 4 pi) + log(w / (s_g + s_+) + (1 - w) / (s_g + s_-))

where ``s_g = sinh^2(g/2)`` and ``s_± = sin^2((x ∓ theta*)/2)``. This *is* the
log-sum-exp of the two weighted component log-densities, written with the
common factor taken out: each term is a positive number bounded by
``1 / s_g`` (at most 4e4 for the prior's smallest gamma), so nothing overflows
or cancels, at theta* = 0 (the components coincide) and at theta* = pi (they
meet at the back) alike, and w = 0 or 1 are fine. It costs one log per round,
where the textbook log-sum-exp costs three transcendental calls. It is tested
against ``scipy.stats.wrapcauchy`` and for finite gradients.
"""

from __future__ import annotations

import numpy as np

LOG_4PI = float(np.log(4.0 * np.pi))


def wc_mixture_logp(x, theta_star, gamma, w):
    """Pointwise log-density (PyTensor); arguments broadcast."""
    import pytensor.tensor as pt

    sg = pt.sinh(gamma / 2.0) ** 2
    sp = pt.sin((x - theta_star) / 2.0) ** 2
    sm = pt.sin((x + theta_star) / 2.0) ** 2
    return pt.log(pt.sinh(gamma)) - LOG_4PI + pt.log(w / (sg + sp) + (1.0 - w) / (sg + sm))


def wc_mixture_logp_numpy(x, theta_star, gamma, w) -> np.ndarray:
    """NumPy twin of :func:`wc_mixture_logp` (same formula)."""
    sg = np.sinh(np.asarray(gamma, float) / 2.0) ** 2
    sp = np.sin((x - theta_star) / 2.0) ** 2
    sm = np.sin((x + theta_star) / 2.0) ** 2
    return np.log(np.sinh(gamma)) - LOG_4PI + np.log(w / (sg + sp) + (1.0 - w) / (sg + sm))


def wc_mixture_random(theta_star, gamma, w, rng: np.random.Generator | None = None, size=None) -> np.ndarray:
    """Draws of theta2 in (-pi, pi] (NumPy).

    A wrapped Cauchy draw is a Cauchy draw with scale gamma wrapped to the
    circle; the sign picks the component (+theta* with probability w).
    """
    from ibo_pymc.circular import wrap_angle

    rng = np.random.default_rng(rng)
    theta_star, gamma, w = np.broadcast_arrays(*(np.asarray(a, float) for a in (theta_star, gamma, w)))
    shape = theta_star.shape if size is None else tuple(np.atleast_1d(size))
    sign = np.where(rng.random(shape) < w, 1.0, -1.0)
    return wrap_angle(sign * theta_star + gamma * rng.standard_cauchy(shape))


def WrappedCauchyMixture(name: str, theta_star, gamma, w, **kwargs):
    """The mixture as a PyMC distribution (``pm.CustomDist``), with a NumPy sampler.

    Use inside a model context like any PyMC distribution::

        theta2 = WrappedCauchyMixture("theta2", theta_star, gamma, w, observed=x, dims="round")
    """
    import pymc as pm

    def random(theta_star, gamma, w, rng=None, size=None):
        return wc_mixture_random(theta_star, gamma, w, rng=rng, size=size)

    def logp(value, theta_star, gamma, w):
        return wc_mixture_logp(value, theta_star, gamma, w)

    return pm.CustomDist(name, theta_star, gamma, w, logp=logp, random=random, **kwargs)


def wrapped_cauchy_mixture_dist(theta_star, gamma, w, **kwargs):
    """Unnamed ``.dist`` form of :func:`WrappedCauchyMixture` (for ``pm.logp``/``pm.draw``)."""
    import pymc as pm

    return pm.CustomDist.dist(
        theta_star,
        gamma,
        w,
        logp=lambda value, t, g, ww: wc_mixture_logp(value, t, g, ww),
        random=lambda t, g, ww, rng=None, size=None: wc_mixture_random(t, g, ww, rng=rng, size=size),
        **kwargs,
    )
