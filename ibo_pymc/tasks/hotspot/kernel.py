"""The wrapped-Cauchy mixture density: one definition, with NumPy, PyTensor and Numba front ends (docs:
explanation/model).

theta2 of a round is drawn from ``w WC(theta*, gamma) + (1 - w) WC(-theta*, gamma)``
with the wrapped Cauchy density ``sinh(g) / (2 pi (cosh g - cos(x - mu)))``.

Numerics: with ``cosh g - cos d = 2 (sinh^2(g/2) + sin^2(d/2))`` the log-density is::

    log(sinh g / 4 pi) + log(w / (s_g + s_-) + (1 - w) / (s_g + s_+))

where ``s_g = sinh^2(g/2)`` and ``s_-+ = sin^2((x -+ theta*)/2)``. This *is* the
log-sum-exp of the two weighted component log-densities with the common factor
taken out: each term is a positive number bounded by ``1 / s_g`` (at most 4e4 for
the prior's smallest gamma), so nothing overflows or cancels, at theta* = 0 (the
components coincide) and at theta* = pi (they meet at the back), and w = 0 or 1
are fine. It costs one log per round where the textbook form costs three
transcendental calls.

The block-of-rounds log trick: the bracket of every round lies in
``[1 / (1 + s_g), 1 / s_g]``, so the product of up to :func:`block_length`
brackets stays inside ``exp(+-680)`` and one logarithm serves a whole block.
The compiled kernels (the grid engine, the fine-grid validator and the fused
likelihood Op with its analytic gradient) loop over rounds in their own
layouts and share the pieces below (inlined by Numba, so sharing costs nothing).

Front ends: :func:`logpdf` (NumPy), :func:`logpdf_pt` (PyTensor, for
``pm.CustomDist``), :func:`random` (NumPy draws). They are tested against
``scipy.stats.wrapcauchy`` and each other, and the PyTensor one for finite gradients.
"""

from __future__ import annotations

import math

import numba
import numpy as np

LOG_4PI = float(np.log(4.0 * np.pi))


# --- the Numba pieces the compiled kernels share -----------------------------------------------
@numba.njit(cache=True, inline="always")
def sinh2_half(g):
    """``s_g = sinh^2(g / 2)``."""
    return math.sinh(0.5 * g) ** 2


@numba.njit(cache=True, inline="always")
def log_norm(g):
    """``log(sinh g / 4 pi)``: the log-density's additive constant per round."""
    return math.log(math.sinh(g)) - LOG_4PI


@numba.njit(cache=True, inline="always")
def block_length(sg):
    """Rounds per logarithm: products of this many brackets stay within ``exp(+-680)``."""
    span = max(-math.log(sg), math.log1p(sg), 1.0)
    return max(1, min(64, int(680.0 / span)))


@numba.njit(cache=True, inline="always")
def scale_terms(g, n_rounds):
    """What a kernel needs per gamma: ``(s_g, n_rounds * log_norm(g), block_length(s_g))``."""
    sg = sinh2_half(g)
    return sg, n_rounds * log_norm(g), block_length(sg)


@numba.njit(cache=True, inline="always")
def bracket(sg, s_minus, s_plus, w):
    """``w / (s_g + s_-) + (1 - w) / (s_g + s_+)``: the density of a round over ``sinh g / 4 pi``."""
    return w / (sg + s_minus) + (1.0 - w) / (sg + s_plus)


@numba.njit(cache=True, inline="always")
def half_difference_sines(sx, cx, st, ct):
    """``sin((x - t)/2), sin((x + t)/2)`` from the sines and cosines of ``x/2`` and ``t/2``."""
    return sx * ct - cx * st, sx * ct + cx * st


# --- NumPy and PyTensor front ends ---------------------------------------------------------------
def logpdf(x, theta_star, gamma, w) -> np.ndarray:
    """Pointwise log-density (NumPy); arguments broadcast."""
    gamma = np.asarray(gamma, float)
    w = np.asarray(w, float)
    sg = np.sinh(gamma / 2.0) ** 2
    sm = np.sin((np.asarray(x, float) - theta_star) / 2.0) ** 2
    sp = np.sin((np.asarray(x, float) + theta_star) / 2.0) ** 2
    return np.log(np.sinh(gamma)) - LOG_4PI + np.log(w / (sg + sm) + (1.0 - w) / (sg + sp))


def logpdf_pt(x, theta_star, gamma, w):
    """Pointwise log-density (PyTensor); arguments broadcast."""
    import pytensor.tensor as pt

    sg = pt.sinh(gamma / 2.0) ** 2
    sm = pt.sin((x - theta_star) / 2.0) ** 2
    sp = pt.sin((x + theta_star) / 2.0) ** 2
    return pt.log(pt.sinh(gamma)) - LOG_4PI + pt.log(w / (sg + sm) + (1.0 - w) / (sg + sp))


def random(theta_star, gamma, w, rng=None, size=None) -> np.ndarray:
    """Draws of theta2 in (-pi, pi]: a Cauchy draw of scale gamma wrapped to the circle, around
    ``+theta*`` with probability ``w`` and ``-theta*`` otherwise."""
    from ibo_pymc.tasks.hotspot.circular import wrap_angle

    rng = np.random.default_rng(rng)
    theta_star, gamma, w = np.broadcast_arrays(*(np.asarray(a, float) for a in (theta_star, gamma, w)))
    shape = theta_star.shape if size is None else tuple(np.atleast_1d(size))
    sign = np.where(rng.random(shape) < w, 1.0, -1.0)
    return wrap_angle(sign * theta_star + gamma * rng.standard_cauchy(shape))
