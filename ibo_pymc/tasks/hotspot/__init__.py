"""The hotspot task (Sandholtz et al. 2022) on the task interface.

Its pieces predate the interface and stay where they are (their saved fits and
tables are unchanged by the move): data in :mod:`ibo_pymc.tasks.hotspot.data` (raw logs, or
a tidy table of rounds: :mod:`ibo_pymc.data.table`), the forward model in
:mod:`ibo_pymc.tasks.hotspot.forward` (acquisition families, the surrogate, argmax tables),
the choice likelihood (the wrapped-Cauchy mixture) and the fit in
:mod:`ibo_pymc.tasks.hotspot.model`, the paper's grid method in :mod:`ibo_pymc.tasks.hotspot.paper_grid`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HotspotTask:
    name: str = "hotspot"
    families: tuple = ("PI", "EI", "UCB")
    #: what the task's data calls one person
    unit_name: str = "subject"
    #: the task's models (each subject is fitted under every one of them for model comparison)
    models: tuple = ("u", "tau", "tau_pm")
    #: the command-line option that picks one model, and the options that pick the data within a subject
    model_option: str = "model"
    where_options: tuple = ()

    @property
    def model_labels(self) -> dict:
        """Display names of the models (u, ũ, ũ±)."""
        from ibo_pymc.tasks.hotspot.population.workflow import variant_labels

        return variant_labels(self.models)

    #: display names of parameters in figures
    parameter_labels = {"tau_neg": "tau^-", "tau_pos": "tau^+"}

    def cohort_fits(self, dataset, subjects, folder, *, models=None, split=None, executor=None, log=None,
                    **settings):
        """Every subject's fit under every model of ``models`` (default all three), saved in ``folder`` and
        reused when current (:func:`~ibo_pymc.tasks.hotspot.model.fit_many.fit_cohort`): the execution layer's
        outcome, whose results are the fits' paths in (subject, model) order. With ``split`` (a
        :class:`~ibo_pymc.tasks.hotspot.data.splits.Split`): the fits of each subject's training rounds."""
        from ibo_pymc.execution import Outcome
        from ibo_pymc.tasks.hotspot.model.config import FitConfig
        from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

        jobs = cohort_jobs(dataset, subjects, list(models or self.models), FitConfig(**settings), split=split)
        if split is not None:
            jobs = [j for j in jobs if j.tag == "-train"]
        done = fit_cohort(jobs, folder, executor=executor, log=log)
        return Outcome(list(done.paths), list(done.failures))

    def load_split(self, path, dataset):
        """A train/test split of the rounds (``subject,session_id,set``; :func:`~ibo_pymc.tasks.hotspot.data.load_split`)."""
        from ibo_pymc.tasks.hotspot.data import load_split

        return load_split(path, dataset)

    def heldout_comparison(self, hierarchical, train_fits, dataset, split):
        """Held-out lppd of each subject's test rounds alone and under the hierarchical model of the training
        fits (:func:`~ibo_pymc.tasks.hotspot.population.workflow.heldout_comparison`)."""
        from ibo_pymc.tasks.hotspot.population.workflow import heldout_comparison

        tests = {int(m.obs.subject): split.partition(dataset.observations(int(m.obs.subject)))[1] for m in train_fits}
        return heldout_comparison(hierarchical, train_fits, tests)

    def load_fit(self, path):
        """A saved fit as its model (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`)."""
        from ibo_pymc.tasks.hotspot.model.fit import IBOModel

        return IBOModel.load(path)

    def plot_fit(self, model, *, seed: int = 0):
        """One subject's moves with the prediction region of theta2 and the credible band of the acquisition curve
        (paper Figs 7-8; ``seed``: the draws of the regions)."""
        return model.plot(seed=seed)

    def plot_cohort(self, models, *, seed: int = 0):
        """Several subjects' fits in one figure: the grid of the paper's Fig 12
        (:func:`~ibo_pymc.tasks.hotspot.fit_plots.plot_cohort`)."""
        from ibo_pymc.tasks.hotspot.fit_plots import plot_cohort

        return plot_cohort({int(m.obs.subject): m.idata for m in models}, seed=seed)

    def load(self, data=None, *, progress: bool = True):
        """:class:`~ibo_pymc.tasks.hotspot.data.rounds.HotspotData` from raw logs, a tidy table of rounds, ``"demo"`` or None."""
        from ibo_pymc.tasks.hotspot.datasets import load_data

        return load_data(data, progress=progress)

    def subjects(self, dataset) -> list[int]:
        return list(dataset.subjects)

    def observations(self, dataset, subject: int, **where):
        if where:
            raise TypeError(f"the hotspot task has no {', '.join(where)}")
        return dataset.observations(subject)

    def fit(self, observations, *, model: str = "tau_pm", progress: bool = False, **config):
        """The family-marginalised posterior of one subject (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`)."""
        from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel

        m = IBOModel(observations, config=FitConfig(model=model, **config))
        m.fit(progress=progress)
        return m.idata

    def sbc(self, data, reps: int, *, seed: int = 0, executor=None, model: str = "tau_pm", n_obs: int = 60, **settings):
        """Simulation-based calibration: ``reps`` subjects drawn from the generative model, fitted; their ranks
        (:func:`ibo_pymc.tasks.hotspot.simulate.sbc.run_sbc`). ``data`` is not read (the move-2 simulator draws
        delta_r1)."""
        from ibo_pymc.tasks.hotspot.simulate.sbc import run_sbc

        return run_sbc(model, reps, seed=seed, executor=executor, n_obs=n_obs, **settings)

    def reproduce(self, dataset, *, split=None, seed: int = 0, executor=None):
        """Tables 1 and 2 of the paper with its grid method (:func:`ibo_pymc.tasks.hotspot.paper_grid.reproduce.reproduce`)."""
        from ibo_pymc.tasks.hotspot.data import random_split
        from ibo_pymc.tasks.hotspot.paper_grid.engine import PaperGridConfig
        from ibo_pymc.tasks.hotspot.paper_grid.reproduce import reproduce

        split = split or random_split(dataset, seed=seed)
        return reproduce(dataset, split, config=PaperGridConfig(), executor=executor)
