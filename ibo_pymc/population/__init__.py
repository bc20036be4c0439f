"""The population level: what a cohort of subjects says together.

* :mod:`~ibo_pymc.population.bms` -- random-effects Bayesian model selection: expected frequencies,
  exceedance and protected exceedance probabilities, Bayesian omnibus risk, families of models
* :mod:`~ibo_pymc.population.plots` -- the BMS and shrinkage figures

A task's own population workflow (its fits -> log evidences -> BMS -> files) lives with the task, e.g.
:mod:`ibo_pymc.tasks.hotspot.population`.
"""

from ibo_pymc.population.bms import (
    BMSResult,
    exceedance_probabilities,
    family_bms,
    random_effects_bms,
)

__all__ = ["BMSResult", "exceedance_probabilities", "family_bms", "random_effects_bms"]
