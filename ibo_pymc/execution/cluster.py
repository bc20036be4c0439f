"""Where tasks run: this process, a local Dask cluster, or an existing Dask cluster.

:func:`open_executor` is what every command-line tool (``--workers``,
``--scheduler``) and the notebooks use:

* ``scheduler=ADDRESS`` (or Dask's own ``DASK_SCHEDULER_ADDRESS`` setting)
  connects to a running cluster (``dask scheduler`` and ``dask worker``,
  dask-jobqueue on SLURM/PBS, dask-kubernetes, Coiled, ...);
* else ``workers=1`` runs everything in this process, with no cluster;
* else a ``LocalCluster`` of ``workers`` single-threaded worker processes
  (default: one per core).

Compile caches. PyTensor's compile directory is not safe for several
processes compiling at once, so every worker gets its own, persistent one
(``<cache>/pytensor/worker-<name>``, set before the worker imports PyTensor by
the :class:`~ibo_pymc.execution.plugins.CompileCachePerWorker` plugin): a worker compiles once and reuses
it for every task, and again in the next run. Numba's on-disk cache (the
compiled density) is shared: Numba writes each cache file to a temporary name
and renames it, so concurrent writers cannot leave a torn file, and each
worker loads the compiled density once and reuses it for every subject it fits.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager

from ibo_pymc.errors import InputError

#: Dask settings of the local cluster's workers. A worker's statistical profiler (every 10 ms) and its
#: event-loop tick (20 ms) and monitors take the GIL from the task thread; our fits are partly pure
#: Python (bridge sampling, assembly) and ran about 15-30% slower in a default worker than in a
#: plain process (measured on 6 fits). Remote workers take their settings from their own Dask config.
LOCAL_WORKER_CONFIG = {
    # Dask sets MALLOC_TRIM_THRESHOLD_ in its workers; setting it turns off glibc's adaptive mmap
    # threshold, so every large NumPy array is a fresh mmap with page faults: kept out
    "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1},
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "2s",
}

#: how long to try reaching a scheduler given by --scheduler before giving up
CONNECT_TIMEOUT = "20s"


def default_workers() -> int:
    """One worker per core."""
    return max(1, os.cpu_count() or 1)


def scheduler_address(scheduler: str | None = None) -> str | None:
    """``scheduler``, else Dask's configured ``scheduler-address`` (``DASK_SCHEDULER_ADDRESS``), else None."""
    if scheduler:
        return scheduler
    import dask

    return dask.config.get("scheduler-address", None) or None


class LazyCluster:
    """A Dask client that is started on first use, so that a run with nothing to compute starts no cluster.

    :func:`~ibo_pymc.execution.runner.run_jobs` calls :meth:`materialize` when it
    has tasks; ``client`` is the started ``distributed.Client`` (or None).
    """

    def __init__(self, workers: int | None, address: str | None):
        self.workers = workers or default_workers()
        self.address = address
        self.client = None
        self._cluster = None

    @property
    def is_local(self) -> bool:
        """A cluster on this machine (no scheduler address given)."""
        return self.address is None

    def slots(self) -> int:
        """How many tasks run at once; a local cluster is not started to answer."""
        from ibo_pymc.execution.runner import slots

        return self.workers if self.is_local and self.client is None else slots(self.materialize())

    def materialize(self):
        if self.client is not None:
            return self.client
        from distributed import Client, LocalCluster

        if self.address is not None:
            try:
                self.client = Client(self.address, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as exc:
                raise InputError(
                    f"cannot reach a Dask scheduler at {self.address!r} ({type(exc).__name__}); expected "
                    "the address that 'dask scheduler' printed, e.g. tcp://127.0.0.1:8786",
                    field="--scheduler",
                ) from None
        else:
            import dask

            with dask.config.set(LOCAL_WORKER_CONFIG), _sigint_ignored():
                # the scheduler's HTTP server on a free port: a second run beside a first one (port 8787
                # taken) would otherwise print distributed's "Port 8787 is already in use" warning
                self._cluster = LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                )
            self.client = Client(self._cluster)
        from ibo_pymc.execution.plugins import CompileCachePerWorker, NoNestedDask

        self.client.register_plugin(CompileCachePerWorker())
        self.client.register_plugin(NoNestedDask())
        return self.client

    def close(self):
        if self.client is not None:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
        self.client = self._cluster = None


@contextmanager
def _sigint_ignored():
    """SIGINT ignored while the local cluster's worker processes start, so that they inherit the ignoring (a
    Python started with SIGINT ignored installs no KeyboardInterrupt handler): Ctrl-C at a terminal signals the
    whole process group, and only this process, which shuts the cluster down, should react, not every worker
    with a traceback of its own."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def open_executor(workers: int | None = None, scheduler: str | None = None, *, lazy: bool = False):
    """Where tasks run (module docstring): ``None`` (this process) or a ``distributed.Client``.

    With ``lazy=True`` a :class:`LazyCluster` is yielded instead of a client: the
    cluster starts only when a task is submitted (what the command-line tools use).
    """
    address = scheduler_address(scheduler)
    if address is None and (workers or default_workers()) == 1:
        yield None
        return
    handle = LazyCluster(workers, address)
    try:
        yield handle if lazy else handle.materialize()
    finally:
        handle.close()
