"""The hotspot task's population level.

* :mod:`.workflow` -- a cohort's fits (u, ũ, ũ±) -> random-effects BMS; the hierarchical model's files
* :mod:`.fine_grid_evidence` -- the second evidence path: the fine grid, and the check of the fits' evidences
  against it

The evidence tables and BMS themselves are shared by every task: :mod:`ibo_pymc.population`.
"""
