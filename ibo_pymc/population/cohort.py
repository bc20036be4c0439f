"""Population-level model selection of a cohort: fits -> log evidences -> random-effects BMS -> tables, figure.

:func:`cohort_bms` runs three comparisons on the long evidence table
(:mod:`ibo_pymc.population.evidence`):

``models``
    u vs ũ vs ũ± (each subject's evidence with the family marginalised);
``families``
    the acquisition families over the nine (model, family) pairs, partitioned
    by family (any UCB vs any PI vs any EI; Penny et al. 2010);
``model_families``
    the same nine pairs, partitioned by model (u vs ũ vs ũ±, each with any
    family as its own random effect).

:func:`write_cohort` writes them with the evidence tables and the figure;
:func:`run_cohort` fits (or reuses) what is missing first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ibo_pymc.population.bms import BMSResult, family_bms, random_effects_bms
from ibo_pymc.population.evidence import evidence_table, lme_table, partition_by

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


def figure(result: CohortBMS):
    from ibo_pymc.forward.variants import get_variant
    from ibo_pymc.population.plots import plot_bms

    labels = {}
    for m in result.models.names:
        try:
            labels[m] = get_variant(m).label
        except Exception:  # a model that is not one of the variants keeps its name
            labels[m] = m
    return plot_bms({"models (family marginalised)": result.models, "acquisition families": result.families,
                     "models (family as a random effect)": result.model_families}, labels=labels)


def write_cohort(result: CohortBMS, folder) -> list[Path]:
    """Write the tables (:data:`FILES`), the summary and the figure into ``folder``, each atomically."""
    import matplotlib.pyplot as plt

    from ibo_pymc.fit_plots import save_figure
    from ibo_pymc.io import write_csv, write_text

    folder = Path(folder)
    out = [
        write_csv(result.evidence, folder / FILES["evidence"], float_format="%.6f"),
        write_csv(lme_table(result.evidence, "model").reset_index(), folder / FILES["lme_models"], float_format="%.6f"),
        write_csv(lme_table(result.evidence, "family").reset_index(), folder / FILES["lme_families"], float_format="%.6f"),
    ]
    for key, r in result.comparisons().items():
        out.append(write_csv(r.table().reset_index(), folder / FILES[key], float_format="%.6g"))
    out.append(write_text(json.dumps(result.summary(), indent=2) + "\n", folder / FILES["summary"]))
    fig = figure(result)
    save_figure(fig, folder / FILES["figure"])
    plt.close(fig)
    out.append(folder / FILES["figure"])
    return out


def run_cohort(data, subjects, fits_folder, *, models=None, config=None, executor=None, log=None, **kwargs):
    """Fit (or reuse the saved fits of) every subject under every model in ``fits_folder``, then
    :func:`cohort_bms` of their evidences. Returns ``(CohortBMS or None, failures)``: with any failed fit the
    comparison is not run (a subject's evidence must be there for every model)."""
    from ibo_pymc.forward.variants import MODELS
    from ibo_pymc.model.cohort import cohort_jobs, fit_cohort

    fits = fit_cohort(cohort_jobs(data, subjects, models or MODELS, config), fits_folder, executor=executor, log=log)
    if fits.failures:
        return None, fits.failures
    return cohort_bms(evidence_table(fits.paths), **kwargs), []
