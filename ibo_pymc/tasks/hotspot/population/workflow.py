"""Population-level model selection of a cohort: fits -> log evidences -> random-effects BMS -> tables, figure.

:func:`cohort_bms` runs three comparisons on the long evidence table
(:mod:`ibo_pymc.tasks.hotspot.population.evidence`):

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
from ibo_pymc.tasks.hotspot.population.evidence import (
    evidence_table,
    lme_table,
    partition_by,
)

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
    from ibo_pymc.population.plots import plot_bms
    from ibo_pymc.tasks.hotspot.forward.variants import get_variant

    labels = {}
    for m in result.models.names:
        try:
            labels[m] = get_variant(m).label
        except Exception:  # a model that is not one of the variants keeps its name
            labels[m] = m
    return plot_bms({"models (family marginalised)": result.models, "acquisition families": result.families,
                     "models (family as a random effect)": result.model_families}, labels=labels)


def write_cohort(result: CohortBMS, folder) -> list[Path]:
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
        fig = figure(result)
        try:
            fig.savefig(tmp["figure"], dpi=150, bbox_inches="tight")
        finally:
            plt.close(fig)
    return [folder / name for name in FILES.values()]


def check_writable(folder) -> None:
    """Fail early (an :class:`~ibo_pymc.errors.InputError`) when the output folder cannot be written."""
    from ibo_pymc.errors import InputError
    from ibo_pymc.io import atomic_path

    try:
        with atomic_path(Path(folder) / ".ibo-write-check") as tmp:
            tmp.write_text("")
        (Path(folder) / ".ibo-write-check").unlink()
    except OSError as exc:
        raise InputError(f"cannot write there ({exc.strerror or type(exc).__name__})", path=folder, field="--out") from None


#: the files :func:`write_hierarchical` writes
HIERARCHICAL_FILES = {
    "population": "population.csv",
    "subjects": "subjects.csv",
    "heldout": "heldout.csv",
    "summary": "hierarchical_summary.json",
    "figure": "shrinkage.png",
    "idata": "hierarchical.nc",
}


def heldout_comparison(h_train, train_fits, tests) -> pd.DataFrame:
    """Held-out lppd of each subject's test rounds under its fit alone and under the hierarchical model fitted
    to the training rounds (``h_train``; ``train_fits`` the subjects' own fits to those rounds)."""
    from ibo_pymc.tasks.hotspot.compare import heldout_lppd

    rows = []
    for fit in train_fits:
        s = int(fit.obs.subject)
        test = tests[s]
        rows.append({"subject": s, "test_rounds": int(test.n_rounds),
                     "independent": heldout_lppd(fit.idata, test, tables=fit.tables),
                     "hierarchical": heldout_lppd(h_train.subject_idata(s), test, tables=fit.tables)})
    df = pd.DataFrame(rows)
    df["difference"] = df["hierarchical"] - df["independent"]
    return df


def write_hierarchical(h, folder, *, heldout: pd.DataFrame | None = None, summary: dict | None = None) -> list[Path]:
    """The hierarchical fit's files (:data:`HIERARCHICAL_FILES`), all or none."""
    from contextlib import ExitStack

    import matplotlib.pyplot as plt

    from ibo_pymc.io import atomic_path
    from ibo_pymc.population.plots import plot_shrinkage

    folder = Path(folder)
    names = {k: v for k, v in HIERARCHICAL_FILES.items() if k != "heldout" or heldout is not None}
    population, shrinkage = h.population(), h.shrinkage()
    with ExitStack() as stack:
        tmp = {k: stack.enter_context(atomic_path(folder / v)) for k, v in names.items()}
        population.to_csv(tmp["population"], index=False, float_format="%.6g")
        diag = h.idata["subject_diagnostics"].to_dataframe().reset_index()
        shrinkage.merge(diag, on="subject").to_csv(tmp["subjects"], index=False, float_format="%.6g")
        if heldout is not None:
            heldout.to_csv(tmp["heldout"], index=False, float_format="%.6g")
        tmp["summary"].write_text(json.dumps({**h.convergence(), **(summary or {})}, indent=2) + "\n")
        fig = plot_shrinkage(shrinkage, population, labels={"tau_neg": "tau^-", "tau_pos": "tau^+"})
        try:
            fig.savefig(tmp["figure"], dpi=150, bbox_inches="tight")
        finally:
            plt.close(fig)
        h.idata.to_netcdf(str(tmp["idata"]), engine="h5netcdf")
    return [folder / v for v in names.values()]


def run_cohort(data, subjects, fits_folder, *, models=None, config=None, executor=None, log=None, **kwargs):
    """Fit (or reuse the saved fits of) every subject under every model in ``fits_folder``, then
    :func:`cohort_bms` of their evidences. Returns ``(CohortBMS or None, failures)``: with any failed fit the
    comparison is not run (a subject's evidence must be there for every model)."""
    from ibo_pymc.tasks.hotspot.forward.variants import MODELS
    from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

    fits = fit_cohort(cohort_jobs(data, subjects, models or MODELS, config), fits_folder, executor=executor, log=log)
    if fits.failures:
        return None, fits.failures
    return cohort_bms(evidence_table(fits.paths), **kwargs), []
