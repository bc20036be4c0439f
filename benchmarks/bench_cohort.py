"""Cohort fits through the execution layer: ``--workers 1`` against ``--workers 2``, and the layer's overhead per task.

1. All subject x model fits with the default configuration (28 x 3 = 84 NUTS
   fits; ``--subjects`` for fewer), each saved as it completes, run by
   :func:`ibo_pymc.tasks.hotspot.model.fit_many.fit_cohort` in this process (``--workers 1``;
   the baseline) and on a local Dask cluster of 2 single-threaded workers. Every
   task samples its chains on one core, so the ideal ratio is the number of
   workers. Cluster start-up is timed apart.
2. Overhead per task: ``--overhead-fits`` fits submitted one at a time to a
   1-worker cluster that writes its fits (as a local cluster does); the time
   from submission to the saved file, minus the fit's and the write's own
   times measured inside the worker, is what the layer adds (scheduling,
   transfer of the task and of the result).

Both runs fit the same seeds, so their posteriors are compared bit for bit.

    python benchmarks/bench_cohort.py [--data DIR] [--subjects 1,2,3] [--overhead-fits 6]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _args import positive_int, subject_arg  # beside this script


def timed_fit(obs, config, path):
    """A fit as a worker runs it (written by the worker), with the durations of the fit and of the write."""
    from ibo_pymc.io import write_fit
    from ibo_pymc.tasks.hotspot.model.fit_many import fit_task

    t0 = time.perf_counter()
    idata = fit_task(obs, config, 1)
    t1 = time.perf_counter()
    write_fit(idata, path)
    return path, t1 - t0, time.perf_counter() - t1


def _same_posterior(p, q) -> bool:
    import xarray as xr

    with (
        xr.open_dataset(p, group="posterior", engine="h5netcdf") as a,
        xr.open_dataset(q, group="posterior", engine="h5netcdf") as b,
    ):
        return all(np.array_equal(a[v].values, b[v].values) for v in a.data_vars)


def main() -> None:
    from ibo_pymc.execution import Job, open_executor, run_jobs
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.forward.variants import MODELS
    from ibo_pymc.tasks.hotspot.model.fit import FitConfig
    from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("IBO_DATA_DIR", "../shared/data/hotspot_raw"))
    ap.add_argument(
        "--subjects", type=subject_arg, default="all", help="comma-separated subject numbers, or all (default)"
    )
    ap.add_argument("--workers", type=positive_int, default=2)
    ap.add_argument("--overhead-fits", type=positive_int, default=6)
    a = ap.parse_args()
    data = load_hotspot(a.data)
    subjects = data.subjects if a.subjects == "all" else a.subjects
    cfg = FitConfig(seed=0)
    jobs = cohort_jobs(data, subjects, MODELS, cfg)
    quiet = lambda p: None  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        one, two = Path(tmp) / "one", Path(tmp) / "two"
        # warm the caches both runs use (tables, Numba) so that neither pays for them
        fit_cohort(jobs[:1], Path(tmp) / "warm", cores=1, progress=quiet)
        t0 = time.perf_counter()
        r1 = fit_cohort(jobs, one, cores=1, progress=quiet)
        t_one = time.perf_counter() - t0
        t0 = time.perf_counter()
        with open_executor(a.workers) as client:
            t_start = time.perf_counter() - t0
            t0 = time.perf_counter()
            r2 = fit_cohort(jobs, two, executor=client, progress=quiet)
            t_two = time.perf_counter() - t0
        # overhead per task on a 1-worker cluster: one fit at a time, from submission to the saved file
        import dask
        from distributed import Client, LocalCluster

        from ibo_pymc.execution.cluster import LOCAL_WORKER_CONFIG

        lat, own, save = [], [], []
        with dask.config.set(LOCAL_WORKER_CONFIG):
            lc = LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None)
        with lc, Client(lc) as c1:
            run_jobs(
                [Job("warm-up", timed_fit, (jobs[0].obs, jobs[0].config, str(Path(tmp) / "w.nc")))], c1, progress=quiet
            )
            for k, job in enumerate(jobs[1 : 1 + a.overhead_fits]):
                t0 = time.perf_counter()
                res = run_jobs(
                    [Job(job.key, timed_fit, (job.obs, job.config, str(Path(tmp) / f"o{k}.nc")))], c1, progress=quiet
                ).raise_failures()
                lat.append(time.perf_counter() - t0)
                own.append(res.results[0][1])
                save.append(res.results[0][2])
        same = all(_same_posterior(p, q) for p, q in zip(r1.paths, r2.paths))
    n = len(jobs)
    print(f"{n} fits ({len(subjects)} subjects x {len(MODELS)} models, default configuration, one core per fit)")
    print(f"  --workers 1 (this process): {t_one:7.1f} s  ({t_one / n:.2f} s per fit)")
    print(f"  --workers {a.workers} (local Dask):     {t_two:7.1f} s  (+ {t_start:.1f} s cluster start-up)")
    print(
        f"  ratio workers 1 / workers {a.workers}: {t_one / t_two:.2f}x (ideal {a.workers}x); with start-up "
        f"{t_one / (t_two + t_start):.2f}x; posteriors bit-identical: {same}"
    )
    lat, own, save = np.array(lat), np.array(own), np.array(save)
    over = lat - own - save
    print(f"overhead per task (1-worker cluster, {len(own)} fits one at a time, from submission to the saved file):")
    print(
        f"  the layer (scheduling, transfer of task and result): median {np.median(over) * 1000:.0f} ms = "
        f"{100 * np.median(over / own):.1f}% of a fit's own time (median fit {np.median(own):.2f} s)"
    )
    print(
        "  saving the fit (NetCDF, atomic; a bare fit that is kept pays it too): "
        f"median {np.median(save) * 1000:.0f} ms"
    )
    failed = r1.failures + r2.failures
    if failed:
        print("failures:", "; ".join(map(str, failed)))


if __name__ == "__main__":
    main()
