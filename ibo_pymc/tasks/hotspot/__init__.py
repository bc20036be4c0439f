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
