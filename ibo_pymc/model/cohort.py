"""Fitting many subjects and models: :func:`fit_cohort`, on any executor.

Each (subject, model) fit is one task of the execution layer
(:mod:`ibo_pymc.execution`): the task carries the subject's rounds and the
whole configuration (the model part includes the argmax tables' settings and
any user-registered acquisition family, so a fresh worker process rebuilds the
model from it), and its own seed (the configuration's). A worker fits and
returns the InferenceData; this process writes it atomically
(``subject-NN-MODEL[TAG].nc``) the moment it arrives, so an interrupted run
keeps every finished fit and no half-written file. A rerun reuses every saved
fit that was made from the same rounds with the same configuration (by its
hash) and argmax-table format, and fits only the rest. A task that fails is
reported naming its subject and model; the others still finish.

Chains run one after another inside a task (``cores=1``) when tasks run side
by side, so that ``--workers`` alone sets how many cores are used; the draws do
not depend on it (nutpie seeds every chain), so the same seed gives the same
fits for ``--workers 1``, ``--workers 2`` or a remote cluster (tested).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibo_pymc.data.rounds import SubjectObservations
from ibo_pymc.execution.runner import Task, TaskFailure, run_tasks
from ibo_pymc.model.config import FitConfig, fit_file_name


@dataclass(frozen=True)
class FitJob:
    """One fit of a cohort run: a subject's rounds under one configuration, saved as ``subject-NN-MODEL[TAG].nc``."""

    obs: SubjectObservations
    config: FitConfig
    tag: str = ""
    file: str | None = None  # a file name of its own, instead of the folder's subject-NN-MODEL[TAG].nc

    @property
    def key(self) -> str:
        return f"subject {self.obs.subject}, model {self.config.model}{' ' + self.tag.strip('-') if self.tag else ''}"

    def path(self, folder) -> Path:
        if self.file is not None:
            return Path(self.file)
        return Path(folder) / fit_file_name(self.obs.subject, self.config.model, self.tag)


@dataclass
class CohortFits:
    """Where each job's fit is (``paths``, in the jobs' order; None if it failed), what was reused, what failed."""

    jobs: list[FitJob]
    paths: list
    reused: list[bool]
    failures: list[TaskFailure] = field(default_factory=list)

    def path(self, subject: int, model: str, tag: str = "") -> Path:
        for j, p in zip(self.jobs, self.paths):
            if j.obs.subject == subject and j.config.model == model and j.tag == tag:
                if p is None:
                    raise KeyError(f"the fit of subject {subject}, model {model}{tag} failed")
                return p
        raise KeyError(f"no fit of subject {subject}, model {model}{tag} in this run")


def same_rounds(a: SubjectObservations, b: SubjectObservations) -> bool:
    """Whether two subjects' data are the same rounds with the same moves."""
    return np.array_equal(np.asarray(a.session_id), np.asarray(b.session_id)) and np.allclose(
        np.asarray(a.theta2, float), np.asarray(b.theta2, float), rtol=0, atol=1e-12)


def load_if_current(path, obs: SubjectObservations, config: FitConfig, *, any_settings: bool = False):
    """``(fit, None)`` if the fit saved at ``path`` stands for ``obs`` under ``config``, else ``(None, why)``.

    It must have been made from the same rounds, with argmax tables of the current
    format and the same configuration (by its hash); ``any_settings`` accepts any
    sampler settings as long as the model is ``config.model``.
    """
    from ibo_pymc.forward.argmax import TABLE_FORMAT
    from ibo_pymc.model.fit import IBOModel

    m = IBOModel.load(path)  # an unreadable file is an InputError naming it: not silently fitted over
    if m.table_format != TABLE_FORMAT:
        return None, "older argmax tables"
    if (m.config.model != config.model) if any_settings else (m.config.key() != config.key()):
        return None, "another configuration"
    if not same_rounds(m.obs, obs):
        return None, "other rounds"
    return m, None


def fit_task(obs: SubjectObservations, config: FitConfig, cores: int | None = None):
    """One fit, as a worker runs it: rebuild the model from the rounds and the configuration, sample, return the InferenceData."""
    from ibo_pymc.model.fit import IBOModel

    m = IBOModel(obs, config=config)
    return m.fit(progress=False, cores=cores)


def fit_cohort(jobs, folder, *, executor=None, cores: int | None = None, progress=None, log=None) -> CohortFits:
    """Fit every :class:`FitJob` (or reuse its saved fit) and save each fit in ``folder`` as it completes.

    ``executor``: None (this process), a ``distributed.Client`` or a
    ``concurrent.futures.Executor``. ``cores``: threads per fit for the chains
    (default: 1 when an executor runs tasks side by side, else the
    configuration's). ``log`` receives one line per reused or refitted file.
    Returns a :class:`CohortFits`; failures are in ``.failures`` (not raised).
    """
    from ibo_pymc.model.fit import write_fit

    jobs = list(jobs)
    folder = Path(folder)
    paths: list = [None] * len(jobs)
    reused = [False] * len(jobs)
    todo = []
    for i, job in enumerate(jobs):
        path = job.path(folder)
        if path.is_file():
            _, why = load_if_current(path, job.obs, job.config)
            if why is None:
                paths[i], reused[i] = path, True
                continue
            if log:
                log(f"{path} was fitted with {why}; fitting again")
        todo.append(i)
    if cores is None and executor is not None:
        cores = 1
    tasks = [Task(jobs[i].key, fit_task, (jobs[i].obs, jobs[i].config, cores)) for i in todo]

    def save(k, idata):
        i = todo[k]
        path = jobs[i].path(folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        paths[i] = write_fit(idata, path)

    out = run_tasks(tasks, executor, label="fits", on_result=save, progress=progress)
    return CohortFits(jobs, paths, reused, out.failures)


def cohort_jobs(data, subjects, models, config: FitConfig | None = None, *, split=None) -> list[FitJob]:
    """The jobs of a cohort: every subject under every model (and, with ``split``, on its training rounds, tag ``-train``)."""
    config = config or FitConfig()
    jobs = []
    for s in subjects:
        obs = data.observations(s)
        for m in models:
            cfg = config.replace(model=m)
            jobs.append(FitJob(obs, cfg))
            if split is not None:
                jobs.append(FitJob(split.partition(obs)[0], cfg, "-train"))
    return jobs
