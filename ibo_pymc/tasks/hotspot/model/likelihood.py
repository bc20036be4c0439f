"""The wrapped-Cauchy mixture as a PyMC distribution (docs: explanation/model).

The density itself (and its NumPy, PyTensor and Numba forms) is defined once,
in :mod:`ibo_pymc.tasks.hotspot.kernel`; ``wc_mixture_logp`` (PyTensor), ``wc_mixture_logp_numpy``
and ``wc_mixture_random`` are its front ends under the names this module has
always exported.
"""

from __future__ import annotations

from ibo_pymc.tasks.hotspot.kernel import LOG_4PI  # noqa: F401 - re-exported
from ibo_pymc.tasks.hotspot.kernel import logpdf as wc_mixture_logp_numpy
from ibo_pymc.tasks.hotspot.kernel import logpdf_pt as wc_mixture_logp
from ibo_pymc.tasks.hotspot.kernel import random as wc_mixture_random

__all__ = [
    "LOG_4PI",
    "WrappedCauchyMixture",
    "wc_mixture_logp",
    "wc_mixture_logp_numpy",
    "wc_mixture_random",
    "wrapped_cauchy_mixture_dist",
]


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
