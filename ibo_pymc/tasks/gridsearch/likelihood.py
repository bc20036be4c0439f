"""The grid task's likelihood: surrogate + acquisition family + softmax, per round, with its gradient.

``loglik(gr, surrogate, family, theta, beta, tau)`` is the log-probability of
every choice of every round of ``gr`` (a :class:`~.data.GridRounds`) but the
first, each conditioned on the round's earlier choices and rewards (rounds are
independent environments). ``theta`` is the surrogate's parameter: the GP's
length-scale lambda, or the mean tracker's ``error_variance``. The mean
tracker's noise variance is ``error_variance ** 2`` in the published code (its
``kError`` is squared in the update); ``error_variance`` here is that same
published quantity, so fitted values compare directly.
"""

from __future__ import annotations

from ibo_pymc.tasks.gridsearch.choice import choice_loglik
from ibo_pymc.tasks.gridsearch.options import GRID_8X8
from ibo_pymc.tasks.gridsearch.surrogate import bmt_posterior, gp_posterior

SURROGATES = ("GP", "BMT")
#: the surrogate's parameter name, by surrogate
THETA_NAME = {"GP": "lambda", "BMT": "error_variance"}


def posterior(
    choices,
    y,
    surrogate: str,
    theta: float,
    *,
    grad: bool = False,
    published: bool | str = False,
    lengths=None,
    options=GRID_8X8,
):
    """``(mu, var, dmu, dvar)`` of the surrogate before every choice over the ``options``
    (:class:`~ibo_pymc.tasks.gridsearch.options.OptionSet`); derivatives in ``theta``; ``lengths`` (R,) the
    observations of each round (default: all)."""
    if surrogate == "GP":
        return gp_posterior(choices, y, theta, lengths=lengths, grad=grad, published=published, options=options)
    if surrogate == "BMT":
        mu, var, dmu, dvar = bmt_posterior(choices, y, theta * theta, lengths=lengths, grad=grad, options=options)
        return mu, var, dmu * (2.0 * theta), dvar * (2.0 * theta)
    raise ValueError(f"unknown surrogate {surrogate!r}; expected one of {', '.join(SURROGATES)}")


def loglik(choices, y, surrogate, family, theta, beta, tau, *, grad=False, published=False, options=GRID_8X8):
    """Per-round log-likelihood (R,) and, with ``grad``, its gradient (R, 3) in (theta, beta, tau)."""
    post = posterior(choices, y, surrogate, theta, grad=grad, published=published, options=options)
    ll, g = choice_loglik(post, choices, y, family, beta, tau, published=published, options=options)
    return (ll, g) if grad else ll
