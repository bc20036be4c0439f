"""The population level: what a cohort of subjects says together.

* :mod:`~ibo_pymc.population.bms` -- random-effects Bayesian model selection: expected frequencies,
  exceedance and protected exceedance probabilities, Bayesian omnibus risk, families of models
* :mod:`~ibo_pymc.population.evidence` -- the long and wide evidence tables of any task's fits (read from
  the fit schema), reading such a table from a file
* :mod:`~ibo_pymc.population.selection` -- a cohort's three comparisons (models, families, models with the
  family as a random effect), their files and figure
* :mod:`~ibo_pymc.population.plots` -- the BMS, shrinkage and family-probability figures

What stays with a task: its own fitting of a cohort and its second evidence paths (e.g. the hotspot task's
fine grid, :mod:`ibo_pymc.tasks.hotspot.population`).
"""

from ibo_pymc.population.bms import (
    BMSResult,
    exceedance_probabilities,
    family_bms,
    random_effects_bms,
)

__all__ = ["BMSResult", "exceedance_probabilities", "family_bms", "random_effects_bms"]
