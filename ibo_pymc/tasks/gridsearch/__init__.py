"""The grid-search task (Wu et al. 2018, 2020): a finite set of options with coordinates (Wu et al. 2020: an 8 x 8
grid, 20 choices per round; Wu et al. 2018: a line of 30 and an 11 x 11 grid, rounds of two lengths).

* :mod:`~ibo_pymc.tasks.gridsearch.data` -- the cognitivemaps study (fetched, pinned) or a tidy table -> rounds
* :mod:`.gridsearch2018` -- Wu et al. 2018's two experiments (fetched, pinned) as a tidy table
* :mod:`.studies` -- which study a data set is (the data decide), and reading either through one name
* :mod:`.options` -- option sets: the options' coordinates and distances
* :mod:`.surrogate` -- GP (RBF kernel) and Bayesian mean tracker posteriors before every choice
* :mod:`.choice` -- acquisition families (UCB, EI, PI, mean, variance) and the softmax choice rule
* :mod:`.likelihood` -- surrogate + family + softmax: each round's log-likelihood and gradient
* :mod:`.density` -- the log-density as a PyTensor Op, a nutpie C callback and a vectorised form
* :mod:`.model` -- the Bayesian fit with the family marginalised (InferenceData)
* :mod:`.mle` -- the published maximum-likelihood leave-one-round-out protocol
* :mod:`.compare` -- PSIS-LOO by round and leave-one-round-out held-out lppd
* :mod:`.simulate` -- simulated participants on the study's environments; parameter recovery
"""

from __future__ import annotations

from dataclasses import dataclass

from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.tasks.gridsearch.choice import FAMILIES


@dataclass(frozen=True)
class GridSearchTask:
    name: str = "gridsearch"
    families: tuple = tuple(FAMILIES)
    #: what the task's data calls one person
    unit_name: str = "participant"
    #: the task's models: the surrogates (each participant is fitted under both for model comparison)
    models: tuple = ("GP", "BMT")
    #: the command-line option that picks one model, and the options that pick the data within a participant:
    #: ``context`` in Wu et al. 2020's data, ``experiment`` in Wu et al. 2018's (:meth:`where`)
    model_option: str = "surrogate"
    where_options: tuple = ("context", "experiment")
    #: the studies this task reads (``ibo-data --study``)
    studies: tuple = ("cognitivemaps", "gridsearch2018")

    def load(self, data=None, *, progress: bool = True, subjects=None, study=None, context=None, experiment=None):
        """The tidy table of choices (:func:`.studies.load`: the data decide the study); the study is one table,
        read whole whatever ``subjects`` names. With no ``data``: the study ``study`` names, else the one the
        options name (``experiment``: Wu et al. 2018), else Wu et al. 2020. A ``study`` that the data are not is
        refused."""
        from ibo_pymc.tasks.gridsearch.studies import load

        if study is None and data is None and experiment is not None:
            study = "gridsearch2018"
        return load(data, progress=progress, study=study)

    def where(self, dataset, *, context=None, experiment=None) -> tuple:
        """``(dataset, where)``: what ``--context`` or ``--experiment`` picks in this data set. Wu et al. 2020's
        data (and a table in its layout): the context, default spatial; Wu et al. 2018's: the experiment, needed
        when the data hold both (the participants' numbers restart in each), and the data set narrowed to it.
        ``where`` is then ``{"context": ...}`` for every method that takes one (the 2018 experiment stands in
        the place of the context: it is what one fit of a participant covers). The option the data do not have
        is refused."""
        from ibo_pymc.errors import InputError
        from ibo_pymc.tasks.gridsearch.studies import study_of

        if study_of(dataset) == "cognitivemaps":
            if experiment is not None:
                raise InputError(
                    "applies to Wu et al. 2018's data (experiments 1d and 2d); these data have contexts "
                    "(spatial, conceptual): use --context",
                    field="--experiment",
                )
            return dataset, {"context": context or "spatial"}
        if context is not None:
            raise InputError(
                "applies to Wu et al. 2020's data (spatial, conceptual); these are Wu et al. 2018's "
                "(experiments 1d, 2d): use --experiment",
                field="--context",
            )
        held = sorted(dataset["experiment"].unique())
        if experiment is None:
            if len(held) > 1:
                raise InputError(
                    f"the data hold experiments {' and '.join(held)}, whose participants are numbered apart; "
                    "name one with --experiment",
                    field="--experiment",
                )
            experiment = held[0]
        if experiment not in held:
            raise InputError(
                f"the data hold experiment{'s' if len(held) > 1 else ''} {', '.join(held)}, not {experiment}",
                field="--experiment",
            )
        return dataset[dataset["experiment"] == experiment].reset_index(drop=True), {"context": experiment}

    def fetch(self, dest=None, *, progress: bool = True, study: str = "cognitivemaps"):
        """Download a study's pinned files (``study``: cognitivemaps, Wu et al. 2020; gridsearch2018, Wu et al.
        2018) into ``dest`` (default: the per-user cache), hash-checked."""
        from ibo_pymc.tasks.gridsearch.studies import module

        return module(study).fetch(dest, progress=progress)

    def verify(self, data=None, *, study: str | None = None) -> tuple:
        """``(folder, {file: what is wrong})`` for a study's pinned files in the folder ``data`` names (the
        study: ``study``, else the one whose files the folder holds, else cognitivemaps)."""
        from ibo_pymc.data.fetch import check_pinned
        from ibo_pymc.tasks.gridsearch.studies import folder_study, module

        if study is None and data is not None:
            study = folder_study(data)
        m = module(study or "cognitivemaps")
        folder = m.resolve_data_dir(data)
        return folder, check_pinned(folder, m.FILES)

    def summary(self, dataset):
        """One row per participant and context (:func:`ibo_pymc.tasks.gridsearch.data.summary`)."""
        from ibo_pymc.tasks.gridsearch.studies import summary

        return summary(dataset)

    def observations_table(self, dataset) -> tuple:
        """The tidy table of choices and what it holds, in words."""
        return dataset, f"{len(dataset)} choices of {dataset['subject'].nunique()} participants"

    def summary_report(self, dataset) -> tuple:
        """One row per participant and context (:meth:`summary`), and that table as text."""
        import pandas as pd

        table = self.summary(dataset)
        with pd.option_context("display.width", 120, "display.max_rows", 500):
            return table, table.to_string(index=False, float_format=lambda v: f"{v:.2f}")

    def subjects(self, dataset) -> list[int]:
        from ibo_pymc.tasks.gridsearch.data import subjects

        return subjects(dataset)

    def observations(self, dataset, subject: int, *, context: str = "spatial", rounds=None):
        """One participant's rounds in one context (:func:`.studies.grid_rounds`; a Wu et al. 2018 table: the
        experiment in the context's place); ``rounds``: default the rounds the study's models fit."""
        from ibo_pymc.tasks.gridsearch.studies import grid_rounds

        return grid_rounds(dataset, subject, context, rounds)

    def fit(self, observations, **config):
        from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, fit

        return fit(observations, GridSearchConfig(**config))

    def model(self, observations, **config):
        """The model of one participant and context (:class:`.model.GridSearchModel`), not yet fitted."""
        from ibo_pymc.tasks.gridsearch.model import GridSearchConfig, GridSearchModel

        return GridSearchModel(observations, GridSearchConfig(**config))

    def fits_table(self, paths, *, executor=None, hdi_prob: float = HDI_PROB):
        """The summary table of saved fits: posterior intervals (HDIs of mass ``hdi_prob``), family
        probabilities, reliable LOO and convergence, one job per fit (:func:`.fits_table.summary_of`)."""
        from ibo_pymc.execution import Job, run_jobs
        from ibo_pymc.tasks.gridsearch.fits_table import summarise_fits, summary_of

        jobs = [Job(f"summary of {p}", summary_of, (str(p), hdi_prob)) for p in paths]
        return summarise_fits(run_jobs(jobs, executor, label="summaries").raise_failures().results)

    def fits_table_name(self, *, surrogate: str, context: str) -> str:
        """The file name of :meth:`fits_table` beside the fits of one surrogate in one context."""
        return f"summary-gridsearch-{context}-{surrogate}.csv"

    #: whether :meth:`fits_table` holds posterior intervals (``ibo-sample --hdi-prob`` applies to it)
    fits_table_intervals = True

    #: how :meth:`fits_table`'s numbers are written
    fits_table_float_format = "%.6g"

    def compare_cohort(
        self, dataset, subjects, folder, *, context: str = "spatial", executor=None, log=None, **settings
    ):
        """The GP against the mean tracker for every participant in one context by reliable LOO
        (:func:`.compare.compare_cohort`): a :class:`~ibo_pymc.tasks.base.Comparison`."""
        from ibo_pymc.tasks.gridsearch.compare import compare_cohort

        return compare_cohort(dataset, subjects, folder, context=context, executor=executor, log=log, **settings)

    def cohort_tables(self, dataset, paths) -> dict:
        """What ``ibo-cohort run`` writes beside the BMS from the cohort's fits (``paths``): for Wu et al.
        (2018)'s data, the generalisation tables (:func:`.generalisation.cohort_tables`); for Wu et al. 2020's,
        nothing more."""
        from ibo_pymc.tasks.gridsearch.studies import study_of

        if study_of(dataset) != "gridsearch2018":
            return {}
        from ibo_pymc.tasks.gridsearch.generalisation import cohort_tables

        return cohort_tables(dataset, paths)

    #: display names of the models (surrogates) and of parameters in figures
    model_labels = {"GP": "GP", "BMT": "mean tracker"}
    parameter_labels = {}

    def cohort_fits(
        self, dataset, subjects, folder, *, context: str = "spatial", models=None, executor=None, log=None, **settings
    ):
        """Every participant's fit under every surrogate of ``models`` (default GP and the mean tracker) in one
        context, saved in ``folder`` and reused when current (:func:`.compare.cohort_fits`): the execution
        layer's outcome, whose results are the fits' paths."""
        from ibo_pymc.tasks.gridsearch.compare import cohort_fits

        return cohort_fits(
            dataset,
            subjects,
            folder,
            context=context,
            surrogates=tuple(models or self.models),
            executor=executor,
            **settings,
        )

    def plot_fit(self, model, *, seed: int = 0):
        """One participant's fit at a glance (:meth:`~ibo_pymc.engine.model.IBOModelBase.plot`; it draws nothing
        at random: ``seed`` seeds the fits only)."""
        return model.plot()

    def plot_cohort(self, models, *, seed: int = 0):
        """Several participants' fits in one figure: their family probabilities
        (:func:`ibo_pymc.population.plots.plot_family_probabilities`)."""
        import pandas as pd

        from ibo_pymc.population.plots import plot_family_probabilities

        probs = pd.DataFrame({m.fit_attrs()["subject"]: m.family_probabilities() for m in models}).T
        return plot_family_probabilities(probs.rename_axis("participant"))

    def recovery(self, data, n: int, seed: int = 0, *, executor=None, **settings):
        """Recovery of ``n`` simulated participants on the study's environments (:func:`.simulate.recovery`)
        and its report (:func:`.simulate.recovery_report`)."""
        from ibo_pymc.tasks.gridsearch.data import load_environments, resolve_data_dir
        from ibo_pymc.tasks.gridsearch.simulate import recovery, recovery_report

        table = recovery(load_environments(resolve_data_dir(data)), n, seed, executor=executor, **settings)
        return table, recovery_report(table)

    def sbc(self, data, reps: int, *, seed: int = 0, executor=None, surrogate: str = "GP", **settings):
        """Simulation-based calibration: ``reps`` participants drawn from the prior on the study's environments
        (rough and smooth), fitted; their ranks (:func:`.simulate.sbc_replicate`)."""
        import numpy as np

        from ibo_pymc.engine.calibration import run_sbc
        from ibo_pymc.tasks.gridsearch.data import load_environments, resolve_data_dir
        from ibo_pymc.tasks.gridsearch.simulate import sbc_replicate

        envs = np.concatenate(list(load_environments(resolve_data_dir(data)).values()))
        return run_sbc(sbc_replicate, (envs,), reps, seed=seed, executor=executor, surrogate=surrogate, **settings)

    def load_fit(self, path):
        """A saved fit as its model (:class:`.model.GridSearchModel`)."""
        from ibo_pymc.tasks.gridsearch.model import GridSearchModel

        return GridSearchModel.load(path)

    def reproduce(self, dataset, *, subjects=None, executor=None, log=None):
        """The published maximum-likelihood cross-validation of the study the data are, as a
        :class:`~ibo_pymc.tasks.base.Reproduction` with tables ``fits`` and ``folds``:

        * Wu et al. 2020 (:func:`.mle.reproduce`): GP-UCB and BMT-UCB per participant and context, leaving out
          each round (``fits``: participant,context,model,nLL,R2,lambda,beta,tau,error_variance);
        * Wu et al. 2018, one experiment (the data set narrowed to it, :meth:`where`;
          :func:`.mle_tabulated.reproduce`): the 24 models per participant, leaving out each round within its
          horizon (``fits``: participant,experiment,model,surrogate,family,nLL,R2,lambda,error_variance,beta,tau;
          parameters the medians over folds).
        """
        import pandas as pd

        from ibo_pymc.errors import InputError
        from ibo_pymc.tasks.base import Reproduction
        from ibo_pymc.tasks.gridsearch.studies import study_of

        if study_of(dataset) == "gridsearch2018":
            from ibo_pymc.tasks.gridsearch.mle_tabulated import reproduce as reproduce_2018

            held = sorted(dataset["experiment"].unique())
            if len(held) != 1:
                raise InputError(
                    f"the data hold experiments {' and '.join(held)}; name one with --experiment", field="--experiment"
                )
            fits, folds = reproduce_2018(dataset, held[0], subjects, executor=executor)
            means = fits.groupby("model", sort=False)["R2"].mean()
            report = f"mean pseudo-R2 (leave one round out within each horizon), experiment {held[0]}\n" + (
                means.to_string(float_format=lambda v: f"{v:.4f}")
            )
            return Reproduction({"folds": folds, "fits": fits}, report, {"folds": "%.10g", "fits": "%.10g"})

        from ibo_pymc.tasks.gridsearch.mle import reproduce

        fits, folds = reproduce(dataset, subjects, executor=executor)
        means = fits.groupby(["context", "model"])["R2"].mean().unstack()
        with pd.option_context("display.width", 140):
            report = "mean R2 (leave-one-round-out) by context and model\n" + means.to_string(
                float_format=lambda v: f"{v:.4f}"
            )
        return Reproduction({"folds": folds, "fits": fits}, report, {"folds": "%.10g", "fits": "%.10g"})
