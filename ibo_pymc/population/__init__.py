"""The population level: what a cohort of subjects says together.

* :mod:`~ibo_pymc.population.evidence` -- log model evidence per subject, model and family (from the fits'
  bridge sampling, or the fine grid), the wide tables BMS reads, reading such a table from a file
* :mod:`~ibo_pymc.population.bms` -- random-effects Bayesian model selection: expected frequencies,
  exceedance and protected exceedance probabilities, Bayesian omnibus risk, families of models
* :mod:`~ibo_pymc.population.cohort` -- a cohort's fits -> evidences -> BMS of models and families -> files
* :mod:`~ibo_pymc.population.plots` -- the BMS figure
"""

from ibo_pymc.population.bms import (
    BMSResult,
    exceedance_probabilities,
    family_bms,
    random_effects_bms,
)
from ibo_pymc.population.evidence import (
    evidence_table,
    fit_evidence,
    grid_evidence,
    lme_table,
    read_lme,
)

__all__ = [
    "BMSResult",
    "evidence_table",
    "exceedance_probabilities",
    "family_bms",
    "fit_evidence",
    "grid_evidence",
    "lme_table",
    "random_effects_bms",
    "read_lme",
]
