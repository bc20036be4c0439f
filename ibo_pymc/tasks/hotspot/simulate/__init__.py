"""Simulation and calibration: move-2 data from a known acquisition function,
the paper's coverage study (appendix C, Tables 3-4) and simulation-based
calibration of the sampled model; populations drawn from known population parameters and their recovery
by the hierarchical model (:mod:`~ibo_pymc.tasks.hotspot.simulate.population`)."""

from ibo_pymc.tasks.hotspot.simulate.moves import Truth, simulate_moves

__all__ = ["Truth", "simulate_moves"]
