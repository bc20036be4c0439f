"""The player's surrogate after move 1: a Bayesian linear model in closed form (docs: explanation/paper-grid).

Each round is rotated so that move 1 lies at ``(click_radius, 0)`` and scores
are taken relative to the start. The belief is ``f(m) = m' beta + eps`` with
``eps ~ N(0, sigma_s^2)`` and ``beta ~ N(0, sigma_beta^2 I)``. Observing the
start (0, 0) -> 0 and move 1 -> ``delta_r1`` gives a Gaussian posterior of beta
(paper eqs 3.4-3.6); the start carries no information about beta since its
design row is zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Surrogate:
    """Bayesian linear surrogate after move 1.

    Parameters
    ----------
    sigma_s : observation noise sd of the player's belief.
    sigma_beta : prior sd of each slope.
    click_radius : length of a move (px); move 1 sits at ``(click_radius, 0)``.
    """

    sigma_s: float = 0.01
    sigma_beta: float = 1.0
    click_radius: float = 20.0

    @property
    def design(self) -> np.ndarray:
        """Design matrix of the observed points: the start (0, 0) and move 1."""
        return np.array([[0.0, 0.0], [self.click_radius, 0.0]])

    @property
    def posterior_cov(self) -> np.ndarray:
        """Posterior covariance of beta (the same for every delta_r1)."""
        X = self.design
        prec = X.T @ X / self.sigma_s**2 + np.eye(2) / self.sigma_beta**2
        return np.linalg.inv(prec)

    def posterior_mean(self, delta_r1) -> np.ndarray:
        """Posterior mean of beta, shape ``delta_r1.shape + (2,)``."""
        d = np.asarray(delta_r1, dtype=float)
        y = np.stack([np.zeros_like(d), d], axis=-1)  # observed scores at the two design points
        return (y @ self.design) @ self.posterior_cov.T / self.sigma_s**2

    def candidates(self, theta) -> np.ndarray:
        """Move-2 candidate points on the click-region boundary around move 1."""
        t = np.asarray(theta, dtype=float)
        r = self.click_radius
        return np.stack([r + r * np.cos(t), r * np.sin(t)], axis=-1)

    def predict_at(self, m, delta_r1) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and sd at points ``m`` (``(..., 2)``), broadcast against ``delta_r1``."""
        m = np.asarray(m, dtype=float)
        mu_beta = self.posterior_mean(delta_r1)
        mean = np.sum(m * mu_beta, axis=-1)
        var = np.einsum("...i,ij,...j->...", m, self.posterior_cov, m) + self.sigma_s**2
        mean, sd = np.broadcast_arrays(mean, np.sqrt(var))
        return mean, sd

    def predict(self, theta, delta_r1) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and sd of the score change at angle ``theta`` given ``delta_r1``.

        ``theta`` and ``delta_r1`` broadcast against each other (e.g. ``theta[None, :]``
        with ``delta_r1[:, None]`` gives a (delta_r1, theta) surface).
        """
        theta, delta_r1 = np.broadcast_arrays(np.asarray(theta, float), np.asarray(delta_r1, float))
        return self.predict_at(self.candidates(theta), delta_r1)

    def predict_grid(self, theta, delta_r1) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and sd on the outer grid ``(len(delta_r1), len(theta))``, vectorised."""
        theta = np.asarray(theta, float)
        d = np.asarray(delta_r1, float)
        m = self.candidates(theta)  # (T, 2)
        C = self.posterior_cov
        # posterior mean of beta is linear in delta_r1: mu_beta = d * g
        g = self.posterior_mean(1.0)
        mean = d[:, None] * (m @ g)[None, :]
        sd = np.sqrt(np.einsum("ti,ij,tj->t", m, C, m) + self.sigma_s**2)
        return mean, np.broadcast_to(sd, mean.shape)
