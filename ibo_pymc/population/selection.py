"""Random-effects model selection of a cohort from its fits' evidences (any task): three comparisons, files, figure.

:func:`cohort_bms` runs three comparisons on the long evidence table (:mod:`ibo_pymc.population.evidence`):

``models``
    the task's models (the hotspot task's u, ũ, ũ±; the grid task's surrogates), each subject's evidence with
    the family marginalised;
``families``
    the acquisition families over the (model, family) pairs, partitioned by family (any UCB vs any PI vs ...;
    Penny et al. 2010);
``model_families``
    the same pairs, partitioned by model (each model with any family as its own random effect).

:func:`write_cohort` writes them with the evidence tables and the figure, all files or none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ibo_pymc.population.bms import BMSResult, family_bms, random_effects_bms
from ibo_pymc.population.evidence import lme_table, partition_by

#: the files :func:`write_cohort` writes
FILES = {
    "evidence": "log_evidence.csv",
    "lme_models": "lme_models.csv",
    "lme_families": "lme_families.csv",
    "models": "bms_models.csv",
    "families": "bms_families.csv",
    "model_families": "bms_model_families.csv",
    "summary": "bms_summary.json",
    "figure": "bms.png",
}


@dataclass(frozen=True)
class CohortBMS:
    """The evidence of a cohort and its three random-effects comparisons (module docstring)."""

    evidence: pd.DataFrame
    models: BMSResult
    families: BMSResult
    model_families: BMSResult

    def comparisons(self) -> dict[str, BMSResult]:
        return {"models": self.models, "families": self.families, "model_families": self.model_families}

    def summary(self) -> dict:
        """Per comparison: the Bayesian omnibus risk, free energies, subjects, iterations, exceedance method."""
        return {k: r.summary() for k, r in self.comparisons().items()}


def cohort_bms(evidence: pd.DataFrame, **kwargs) -> CohortBMS:
    """The three comparisons of a long evidence table; ``kwargs`` go to
    :func:`~ibo_pymc.population.bms.random_effects_bms` (tolerance, exceedance method, samples, seed)."""
    wide = lme_table(evidence, "family")
    return CohortBMS(
        evidence=evidence,
        models=random_effects_bms(lme_table(evidence, "model"), **kwargs),
        families=family_bms(wide, partition_by(wide.columns, "family"), **kwargs),
        model_families=family_bms(wide, partition_by(wide.columns, "model"), **kwargs),
    )


def figure(result: CohortBMS, labels: dict | None = None):
    """The BMS figure of the three comparisons (``labels``: display names of the models)."""
    from ibo_pymc.population.plots import plot_bms

    labels = {m: (labels or {}).get(m, m) for m in result.models.names}
    return plot_bms(
        {
            "models (family marginalised)": result.models,
            "acquisition families": result.families,
            "models (family as a random effect)": result.model_families,
        },
        labels=labels,
    )


def write_cohort(result: CohortBMS, folder, labels: dict | None = None) -> list[Path]:
    """Write the tables (:data:`FILES`), the summary and the figure into ``folder``: all of them, or (on any
    error, Ctrl-C included) none, each renamed into place only once every one is complete."""
    from contextlib import ExitStack

    import matplotlib.pyplot as plt

    from ibo_pymc.io import atomic_path

    folder = Path(folder)
    tables = {
        "evidence": result.evidence,
        "lme_models": lme_table(result.evidence, "model").reset_index(),
        "lme_families": lme_table(result.evidence, "family").reset_index(),
        **{key: r.table().reset_index() for key, r in result.comparisons().items()},
    }
    with ExitStack() as stack:
        tmp = {key: stack.enter_context(atomic_path(folder / name)) for key, name in FILES.items()}
        for key, df in tables.items():
            df.to_csv(tmp[key], index=False, float_format="%.6f" if key.startswith(("lme", "evidence")) else "%.6g")
        tmp["summary"].write_text(json.dumps(result.summary(), indent=2) + "\n")
        fig = figure(result, labels)
        try:
            fig.savefig(tmp["figure"], dpi=150, bbox_inches="tight")
        finally:
            plt.close(fig)
    return [folder / name for name in FILES.values()]
