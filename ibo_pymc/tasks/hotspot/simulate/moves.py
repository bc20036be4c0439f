"""Move-2 data from a known acquisition function (docs: explanation/simulation, paper appendix C).

delta_r1 ~ U(-34, 34); theta2 follows the wrapped-Cauchy mixture around
+-theta*(delta_r1) of the given family and parameter (augmented by tau, or by
tau^- and tau^+), with scale gamma and weight w of the +theta* component.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations


@dataclass(frozen=True)
class Truth:
    """The generating parameters of a simulated subject."""

    family: str
    param: float
    gamma: float = 0.25
    w: float = 0.5
    tau_neg: float = 0.0
    tau_pos: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def simulate_moves(
    truth: Truth, n: int, rng=None, *, tables=None, delta_range=(-34.0, 34.0), subject: int = 0, exact: bool = False
) -> SubjectObservations:
    """``n`` simulated rounds as :class:`SubjectObservations` (session ids 1..n).

    theta* comes from the argmax tables by interpolation (the curve the models
    fit), or with ``exact=True`` from a grid search of the acquisition function
    at each drawn delta_r1 (paper appendix C, step 3; the tables' theta grid,
    surrogate and augmentation rule).
    """
    from ibo_pymc.tasks.hotspot.forward.argmax import argmax_curve, load_tables
    from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_random

    rng = np.random.default_rng(rng)
    tables = tables or load_tables()
    d = rng.uniform(*delta_range, size=n)
    if exact:
        cfg = tables.config
        ts = argmax_curve(
            truth.family,
            truth.param,
            d,
            tau=truth.tau_pos,
            negative_tau=truth.tau_neg,
            theta=cfg.theta,
            rule=cfg.rule,
            surrogate=cfg.surrogate,
        )
    else:
        ts = tables.theta_star(truth.family, truth.param, d, tau=truth.tau_pos, tau_neg=truth.tau_neg)
    x = wc_mixture_random(ts, truth.gamma, truth.w, rng=rng)
    return SubjectObservations(
        subject=subject,
        user_id=subject,
        session_id=np.arange(1, n + 1),
        round_index=np.arange(1, n + 1),
        delta_r1=d,
        theta2=x,
    )
