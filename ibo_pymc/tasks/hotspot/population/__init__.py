"""The hotspot task's population level: its fits -> log evidences -> random-effects BMS -> files.

* :mod:`.evidence` -- log model evidence per subject, model and family (from the fits' bridge sampling,
  or the fine grid), the wide tables BMS reads, reading such a table from a file
* :mod:`.workflow` -- a cohort's fits -> evidences -> BMS of models and families -> files; the hierarchical
  model's files

BMS itself is shared by every task: :mod:`ibo_pymc.population.bms`.
"""

from ibo_pymc.tasks.hotspot.population.evidence import (
    evidence_table,
    fit_evidence,
    grid_evidence,
    lme_table,
    read_lme,
)

__all__ = ["evidence_table", "fit_evidence", "grid_evidence", "lme_table", "read_lme"]
