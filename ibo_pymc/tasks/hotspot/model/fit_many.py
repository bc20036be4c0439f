"""Fitting many subjects and models: :func:`fit_cohort`, on any executor.

Each (subject, model) fit is one task of the execution layer
(:mod:`ibo_pymc.execution`): the task carries the subject's rounds and the
whole configuration (the model part includes the argmax tables' settings and
any user-registered acquisition family, so a fresh worker process rebuilds the
model from it), and its own seed (the configuration's). Each fit is written
atomically (``subject-NN-MODEL[TAG].nc``) the moment it is finished: by the
worker itself when it sees the output folder (this machine, or a shared file
system; checked), so that writes run in parallel and no draws travel, else by
this process from the returned InferenceData. An interrupted run keeps every
finished fit and leaves no half-written file (temporary files of a writer
killed mid-write are removed). A rerun reuses every saved fit that was made
from the same rounds with the same configuration (by its hash) and
argmax-table format, and fits only the rest. A task that fails is
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

from ibo_pymc.execution.runner import Job, JobFailure, run_jobs
from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
from ibo_pymc.tasks.hotspot.model.config import FitConfig, fit_file_name


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
    """Where each job's fit is (``paths``, in the jobs' order; None if it failed), what was reused, what failed,
    and each fit's evidence rows (``evidence``: computed while the fit was in memory, None where it failed)."""

    jobs: list[FitJob]
    paths: list
    reused: list[bool]
    failures: list[JobFailure] = field(default_factory=list)
    evidence: list = field(default_factory=list)

    def saved(self) -> list:
        """The fits as :class:`~ibo_pymc.io.SavedFit` (path and evidence rows; None where a fit failed)."""
        from ibo_pymc.io import SavedFit

        ev = self.evidence or [None] * len(self.paths)
        return [None if p is None else SavedFit(Path(p), e) for p, e in zip(self.paths, ev)]

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
        np.asarray(a.theta2, float), np.asarray(b.theta2, float), rtol=0, atol=1e-12
    )


def load_if_current(path, obs: SubjectObservations, config: FitConfig, *, any_settings: bool = False):
    """``(fit, None)`` if the fit saved at ``path`` stands for ``obs`` under ``config``, else ``(None, why)``.

    It must have been made from the same rounds, with argmax tables of the current
    format and the same configuration (by its hash); ``any_settings`` accepts any
    sampler settings as long as the model is ``config.model``.
    """
    from ibo_pymc.tasks.hotspot.forward.argmax import TABLE_FORMAT
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    m = IBOModel.load(path)  # an unreadable file is an InputError naming it: not silently fitted over
    if m.table_format != TABLE_FORMAT:
        return None, "older argmax tables"
    if (m.config.model != config.model) if any_settings else (m.config.key() != config.key()):
        return None, "another configuration"
    if not same_rounds(m.obs, obs):
        return None, "other rounds"
    return m, None


def fit_task(obs: SubjectObservations, config: FitConfig, cores: int | None = None, path: str | None = None):
    """One fit, as a worker runs it: rebuild the model from the rounds and the configuration, sample, and
    return the InferenceData, or, with ``path``, write it there (atomically) and return it as a
    :class:`~ibo_pymc.io.SavedFit` (the path, and the evidence rows computed from the fit in memory)."""
    from ibo_pymc.io import SavedFit, write_fit
    from ibo_pymc.population.evidence import fit_evidence
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    m = IBOModel(obs, config=config)
    idata = m.fit(progress=False, cores=cores)
    return idata if path is None else SavedFit(write_fit(idata, path), fit_evidence(idata))


def _partial_files(path: Path) -> list[Path]:
    """Temporary files of an unfinished atomic write of ``path`` (:func:`ibo_pymc.io.atomic_path`)."""
    return list(path.parent.glob(f".{path.name}.tmp-*")) if path.parent.is_dir() else []


def sweep_partial(jobs, folder) -> int:
    """Remove what a killed writer left of the jobs' files (a worker lost mid-write); returns how many."""
    n = 0
    for job in jobs:
        for f in _partial_files(job.path(folder)):
            f.unlink(missing_ok=True)
            n += 1
    return n


def _visible_to_workers(executor, folder: Path) -> bool:
    """Whether the executor's workers see ``folder`` (this process, a local pool or cluster, or a shared file
    system)."""
    import uuid

    from ibo_pymc.execution.runner import is_dask_client, materialize

    if executor is None:
        return True
    if getattr(executor, "is_local", False):
        return True  # a local cluster: same machine
    client = materialize(executor)
    if not is_dask_client(client) or type(getattr(client, "cluster", None)).__name__ == "LocalCluster":
        return True
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f".ibo-visible-{uuid.uuid4().hex}"
    marker.touch()
    try:
        seen = client.run(lambda p=str(marker): __import__("os").path.exists(p))
        return bool(seen) and all(seen.values())
    finally:
        marker.unlink(missing_ok=True)


def fit_cohort(
    jobs, folder, *, executor=None, cores: int | None = None, progress=None, log=None, write_on: str | None = None
) -> CohortFits:
    """Fit every :class:`FitJob` (or reuse its saved fit) and save each fit in ``folder`` as it completes.

    ``executor``: None (this process), a ``distributed.Client`` or a
    ``concurrent.futures.Executor``. ``cores``: threads per fit for the chains
    (default: 1 when an executor runs tasks side by side, else the
    configuration's). ``log`` receives one line per refitted file.
    ``write_on``: ``"worker"`` (each worker writes its fits: parallel writes, no
    transfer of draws) or ``"driver"`` (this process writes what the workers
    return); default ``"worker"`` when the workers see ``folder`` (this machine,
    or a shared file system, checked with a marker file) and ``"driver"`` otherwise.
    Returns a :class:`CohortFits`; failures are in ``.failures`` (not raised).
    """
    from ibo_pymc.io import write_fit
    from ibo_pymc.population.evidence import fit_evidence

    jobs = list(jobs)
    folder = Path(folder)
    sweep_partial(jobs, folder)  # debris of an earlier run whose writer was killed mid-write
    paths: list = [None] * len(jobs)
    evidence: list = [None] * len(jobs)
    reused = [False] * len(jobs)
    todo = []
    for i, job in enumerate(jobs):
        path = job.path(folder)
        if path.is_file():
            m, why = load_if_current(path, job.obs, job.config)
            if why is None:
                paths[i], reused[i], evidence[i] = path, True, fit_evidence(m)
                continue
            if log:
                log(f"{path} was fitted with {why}; fitting again")
        todo.append(i)
    if cores is None and executor is not None:
        cores = 1
    if not todo:
        return CohortFits(jobs, paths, reused, [], evidence)
    if write_on is None:
        write_on = "worker" if _visible_to_workers(executor, folder) else "driver"
    if write_on not in ("worker", "driver"):
        raise ValueError(f"write_on must be 'worker' or 'driver', got {write_on!r}")
    for i in todo:
        jobs[i].path(folder).parent.mkdir(parents=True, exist_ok=True)
    where = (lambda i: str(jobs[i].path(folder).resolve())) if write_on == "worker" else (lambda i: None)
    # a fit's time grows with its rounds: the largest subjects start first (the execution layer's start order)
    tasks = [
        Job(jobs[i].key, fit_task, (jobs[i].obs, jobs[i].config, cores, where(i)), cost=len(jobs[i].obs.theta2))
        for i in todo
    ]

    def save(k, result):
        i = todo[k]
        if write_on == "worker":  # the worker wrote to the resolved path: keep the folder's own form
            paths[i], evidence[i] = jobs[i].path(folder), result.evidence
        else:
            paths[i], evidence[i] = write_fit(result, jobs[i].path(folder)), fit_evidence(result)

    try:
        out = run_jobs(tasks, executor, label="fits", on_result=save, progress=progress)
    finally:
        sweep_partial([jobs[i] for i in todo if paths[i] is None], folder)
    return CohortFits(jobs, paths, reused, out.failures, evidence)


def cohort_jobs(data, subjects, models, config: FitConfig | None = None, *, split=None) -> list[FitJob]:
    """The jobs of a cohort: every subject under every model (and, with ``split``, on its training rounds, tag
    ``-train``)."""
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


def convergence_of(path) -> dict:
    """One execution-layer job: the convergence row
    (:func:`~ibo_pymc.tasks.hotspot.model.report.convergence_row`) of the fit saved at ``path``."""
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel
    from ibo_pymc.tasks.hotspot.model.report import convergence_row

    return convergence_row(IBOModel.load(path))
