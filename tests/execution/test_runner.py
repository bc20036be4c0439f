"""The execution layer: tasks run here, in a process pool or on a Dask cluster, with the same results."""

from __future__ import annotations

import operator
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from ibo_pymc.execution import Job, JobError, open_executor, run_jobs
from ibo_pymc.execution.plugins import compile_dir


def boom(x):
    raise ValueError(f"bad input {x}\nsecond line")


def die(x):
    os._exit(3)  # a worker process that dies: a lost worker


def started(x):
    import time

    t = time.time()
    time.sleep(0.3)
    return t


def _costly():
    """Six tasks whose costs put the last two first: the start order is 4, 5, then 0..3 as given."""
    return [Job(f"task {i}", started, (i,), cost=c) for i, c in enumerate((1, 1, 0, 1, 5, 3))]


def _starts(out) -> list[int]:
    return sorted(range(len(out.results)), key=lambda i: out.results[i])


def _tasks():
    return [Job(f"task {i}", operator.mul, (i, 3)) for i in range(6)] + [Job("subject 9, model tau", boom, (9,))]


def _check(out, seen):
    assert out.results == [0, 3, 6, 9, 12, 15, None]
    assert [str(f) for f in out.failures] == ["subject 9, model tau: ValueError: bad input 9"]
    assert [p.done for p in seen] == list(range(8)) and seen[-1].failed == 1 and seen[-1].running == 0
    assert seen[-1].line().startswith("tasks: 7/7 done, 1 failed, 0 running")
    with pytest.raises(JobError, match="subject 9, model tau: ValueError: bad input 9"):
        out.raise_failures()


@pytest.mark.parametrize("pool", [None, ThreadPoolExecutor, ProcessPoolExecutor])
def test_results_in_order_failures_named_progress_counted(pool):
    seen = []
    if pool is None:
        out = run_jobs(_tasks(), None, progress=seen.append)
    else:
        with pool(2) as ex:
            out = run_jobs(_tasks(), ex, progress=seen.append)
    _check(out, seen)


def test_side_by_side_the_costliest_tasks_start_first():
    from ibo_pymc.execution.runner import start_order

    assert start_order(_costly()) == [4, 5, 0, 1, 3, 2]
    with ThreadPoolExecutor(1) as ex:  # one at a time: the start order is the run order
        out = run_jobs(_costly(), ex, progress=lambda p: None)
    assert _starts(out) == [4, 5, 0, 1, 3, 2]


def test_a_failing_result_handler_fails_only_its_task():
    def keep(i, v):
        if i == 2:
            raise OSError("disk full")

    out = run_jobs(_tasks()[:4], None, on_result=keep, progress=lambda p: None)
    assert out.results == [0, 3, None, 9] and [f.key for f in out.failures] == ["task 2"]


def test_local_dask_cluster_same_results_own_compile_dirs_and_a_lost_worker():
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), open_executor(2) as client:
        assert client is not None and len(client.scheduler_info()["workers"]) == 2
        seen = []
        _check(run_jobs(_tasks(), client, progress=seen.append), seen)
        # every worker compiles into a directory of its own (PyTensor's is not safe to share)
        dirs = client.run(lambda: os.environ.get("PYTENSOR_FLAGS", ""))
        assert len(set(dirs.values())) == 2 and all("compiledir=" in d for d in dirs.values())
        names = [w["name"] for w in client.scheduler_info()["workers"].values()]
        assert {f"compiledir={compile_dir(n)}" for n in names} == set(dirs.values())
        # a worker that dies is a failed task named in the outcome (Dask's KilledWorker); the nanny
        # restarts the worker and the cluster goes on
        out = run_jobs([Job("dies", die, (1,))], client, progress=lambda p: None)
        assert out.results == [None] and [f.key for f in out.failures] == ["dies"]
        assert "KilledWorker" in out.failures[0].error
        assert run_jobs(_tasks()[:3], client, progress=lambda p: None).results == [0, 3, 6]
        # two workers: the two costliest tasks are the first two to start. First both workers are up and have
        # run these tasks once (the worker restarted above, and a worker's first task, which imports this
        # module, can take longer than a task on a busy machine: a later task then starts first elsewhere)
        client.wait_for_workers(2, timeout=120)
        run_jobs(_costly(), client, progress=lambda p: None)
        out = run_jobs(_costly(), client, progress=lambda p: None)
        assert set(_starts(out)[:2]) == {4, 5}


def test_one_worker_runs_here_and_a_bad_scheduler_is_a_clear_error(monkeypatch):
    from ibo_pymc.errors import InputError
    from ibo_pymc.execution import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "2s")
    with open_executor(1) as ex:
        assert ex is None
    with pytest.raises(InputError, match="cannot reach a Dask scheduler at 'tcp://127.0.0.1:9'"):
        with open_executor(2, scheduler="tcp://127.0.0.1:9"):
            pass
