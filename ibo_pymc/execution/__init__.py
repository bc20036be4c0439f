"""The execution layer: every loop over subjects or replicates runs through it.

:mod:`~ibo_pymc.execution.runner` maps independent tasks over this process, a
``concurrent.futures`` executor or a Dask client and gathers them as they
complete; :mod:`~ibo_pymc.execution.cluster` opens the executor (``--workers``,
``--scheduler``). Both import nothing of the package above the cache, so every
layer can hand its loop to them.
"""

from ibo_pymc.execution.cluster import default_workers, open_executor
from ibo_pymc.execution.runner import (
    Job,
    JobError,
    JobFailure,
    Outcome,
    Progress,
    run_jobs,
)

__all__ = ["Outcome", "Progress", "Job", "JobError", "JobFailure", "default_workers", "open_executor", "run_jobs"]
