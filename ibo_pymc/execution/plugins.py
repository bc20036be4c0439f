"""The Dask worker plugins of a local cluster (:class:`~ibo_pymc.execution.cluster.LazyCluster`).

Apart from :mod:`~ibo_pymc.execution.cluster` because their base class imports ``distributed`` (0.4 s), which a
run in this process never needs; the cluster imports them when it starts.
"""

from __future__ import annotations

import os
import re
import sys

from distributed import WorkerPlugin

from ibo_pymc.cache import cache_root


def compile_dir(worker_name) -> str:
    """The PyTensor compile directory of one worker."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(worker_name)).strip("_") or "worker"
    return str(cache_root() / "pytensor" / f"worker-{name}")


class CompileCachePerWorker(WorkerPlugin):
    """Give each Dask worker its own PyTensor compile directory (:mod:`ibo_pymc.execution.cluster`)."""

    name = "ibo-pymc-compile-cache"

    def setup(self, worker):
        path = compile_dir(worker.name)
        if "pytensor" in sys.modules:  # a worker that already compiled keeps the directory it has
            return
        os.makedirs(path, exist_ok=True)
        flags = [f for f in os.environ.get("PYTENSOR_FLAGS", "").split(",") if f and not f.startswith("compiledir=")]
        os.environ["PYTENSOR_FLAGS"] = ",".join([*flags, f"compiledir={path}"])


class NoNestedDask(WorkerPlugin):
    """Run whatever Dask graph a task computes inside its worker, synchronously: xarray's ``to_netcdf`` asks
    Dask for a scheduler even for in-memory data, and in a worker Dask answers with a new client of the
    cluster (a connection per worker, and at Ctrl-C each one printed a traceback as it was collected after
    its event loop closed). Our tasks never submit work back to the cluster."""

    name = "ibo-pymc-no-nested-dask"

    def setup(self, worker):
        import dask

        dask.config.set(scheduler="synchronous")
