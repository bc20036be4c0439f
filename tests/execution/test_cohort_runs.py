"""Cohort runs through the execution layer: resumable, failures named, and the same bytes on any cluster.

A cluster started with Dask's own command line (``dask scheduler``; ``dask
worker ... --nworkers 2 --nthreads 1``) on 127.0.0.1 runs ``ibo-reproduce``,
``ibo-sample --subject all`` and ``ibo-simulate coverage`` through
``--scheduler``; their outputs equal those of a run in this process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import PAPER_SPLITS, REPO

FIT_ARGS = ["--draws", "500", "--tune", "300", "--chains", "2", "--seed", "1", "--quiet"]


@pytest.fixture(scope="module")
def two_players(raw_folder, tmp_path_factory) -> Path:
    """Two of the study's players (user ids 38 and 64: subjects 3 and 28 of the study, 1 and 2 here)."""
    d = tmp_path_factory.mktemp("two")
    for uid in (38, 64):
        for kind in ("eventrec", "sesrec"):
            shutil.copy(raw_folder / f"{kind}{uid}.csv", d)
    return d


@pytest.fixture(scope="module")
def local_fits(two_players, tmp_path_factory) -> Path:
    """``ibo-sample --subject all --workers 1``: both fits in this process."""
    from ibo_pymc.cli.sample import main

    out = tmp_path_factory.mktemp("local")
    assert main(["--subject", "all", "--data", str(two_players), "--out", str(out), "--workers", "1", *FIT_ARGS]) == 0
    return out


def _same_fits(a: Path, b: Path):
    import arviz as az

    assert (a / "convergence-tau_pm.csv").read_bytes() == (b / "convergence-tau_pm.csv").read_bytes()
    for s in (1, 2):
        x, y = (az.from_netcdf(str(d / f"subject-{s:02d}-tau_pm.nc")) for d in (a, b))
        for g in ("posterior", "conditional_posterior", "log_likelihood"):
            for v in x[g].data_vars:
                np.testing.assert_array_equal(x[g][v].values, y[g][v].values)


@pytest.fixture(scope="module")
def dask_cli_cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers started with Dask's own CLI on 127.0.0.1."""
    d = tmp_path_factory.mktemp("cluster")
    info = d / "scheduler.json"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    sched = subprocess.Popen(
        [*dask, "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=d,
    )
    procs = [sched]
    try:
        deadline = time.time() + 60
        while not info.is_file() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--nworkers",
                "2",
                "--nthreads",
                "1",
                "--no-dashboard",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=d,
        )
        procs.append(worker)
        from distributed import Client

        with Client(address) as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_dask_cli_cluster_runs_the_cohort_commands_with_local_outputs(
    dask_cli_cluster, local_fits, two_players, raw_folder, tmp_path
):
    from ibo_pymc.cli.reproduce import main as reproduce
    from ibo_pymc.cli.sample import main as sample
    from ibo_pymc.cli.simulate import main as simulate

    remote = ["--scheduler", dask_cli_cluster]
    # ibo-sample --subject all: the same fits as in this process
    out = tmp_path / "fits"
    assert sample(["--subject", "all", "--data", str(two_players), "--out", str(out), *remote, *FIT_ARGS]) == 0
    _same_fits(local_fits, out)
    # ibo-reproduce: the committed tables (made in this process)
    rep = tmp_path / "rep"
    assert (
        reproduce(["--data", str(raw_folder), "--split", str(PAPER_SPLITS), "--out", str(rep), "--quiet", *remote]) == 0
    )
    for name in ("fits.csv", "table1.csv", "table2.csv"):
        assert (rep / name).read_bytes() == (REPO / "models" / "reproduction" / name).read_bytes(), name
    # ibo-simulate coverage: the same cell
    cov = ["coverage", "--family", "UCB", "--param", "0.745", "--n-obs", "100", "--reps", "24", "--quiet"]
    assert simulate([*cov, "--csv", str(tmp_path / "remote.csv"), *remote]) == 0
    assert simulate([*cov, "--csv", str(tmp_path / "here.csv"), "--workers", "1"]) == 0
    assert (tmp_path / "remote.csv").read_bytes() == (tmp_path / "here.csv").read_bytes()


def test_rerun_reuses_valid_fits_and_refits_only_the_stale(local_fits, two_players, tmp_path, monkeypatch):
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.model import fit_many as cohort
    from ibo_pymc.tasks.hotspot.model.fit import FitConfig

    folder = tmp_path / "fits"
    shutil.copytree(local_fits, folder)
    data = load_hotspot(two_players)
    cfg = FitConfig(draws=500, tune=300, chains=2, seed=1)
    jobs = cohort.cohort_jobs(data, [1, 2], ["tau_pm"], cfg)
    before = {p: p.stat().st_mtime_ns for p in folder.glob("*.nc")}

    def no_fit(*a, **k):
        raise AssertionError("refitted")

    monkeypatch.setattr(cohort, "fit_task", no_fit)
    debris = folder / ".subject-01-tau_pm.nc.tmp-k1ll3d.nc"  # what a writer killed mid-write leaves
    debris.write_bytes(b"half")
    res = cohort.fit_cohort(jobs, folder, progress=lambda p: None)
    assert res.reused == [True, True] and not res.failures and not debris.exists()
    assert {p: p.stat().st_mtime_ns for p in folder.glob("*.nc")} == before
    # the evidence rows come with the fits (from the models the reuse check loaded), equal to the files' own
    from ibo_pymc.io import SavedFit
    from ibo_pymc.population.evidence import evidence_table

    saved = res.saved()
    assert all(isinstance(f, SavedFit) and f.evidence is not None for f in saved)
    assert [Path(f) for f in saved] == res.paths and str(saved[0]) == str(res.paths[0])
    pd.testing.assert_frame_equal(evidence_table(saved), evidence_table(res.paths))
    gone = SavedFit(tmp_path / "no-such-file.nc", saved[0].evidence)  # the rows are not read from the file
    pd.testing.assert_frame_equal(evidence_table([gone]), evidence_table(saved[:1]))
    # equal and hashed by the path alone (the rows are no part of it); taken as a path by the family table
    assert saved[0] == SavedFit(res.paths[0]) and len({saved[0], SavedFit(res.paths[0])}) == 1
    from ibo_pymc.population.evidence import family_lme

    pd.testing.assert_frame_equal(family_lme(saved), family_lme(res.paths))
    # another seed is another configuration: both are fitted again (here: the fit is refused by no_fit)
    said = []
    res = cohort.fit_cohort(
        cohort.cohort_jobs(data, [1, 2], ["tau_pm"], cfg.replace(seed=2)),
        folder,
        progress=lambda p: None,
        log=said.append,
    )
    assert res.reused == [False, False] and len(res.failures) == 2
    assert all("another configuration" in s for s in said)
    assert [f.key for f in res.failures] == ["subject 1, model tau_pm", "subject 2, model tau_pm"]


def test_a_failing_task_is_named_and_the_others_finish(hotspot, tmp_path):
    from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
    from ibo_pymc.tasks.hotspot.model.fit import FitConfig
    from ibo_pymc.tasks.hotspot.model.fit_many import FitJob, fit_cohort

    cfg = FitConfig(model="u", draws=300, tune=200, chains=2, seed=1)
    empty = SubjectObservations(
        subject=99,
        user_id=99,
        session_id=np.array([], int),
        round_index=np.array([], int),
        delta_r1=np.array([]),
        theta2=np.array([]),
    )
    jobs = [FitJob(empty, cfg), FitJob(hotspot.observations(28), cfg)]
    seen = []
    res = fit_cohort(jobs, tmp_path, progress=seen.append, write_on="driver")
    assert [str(f) for f in res.failures] == [
        "subject 99, model u: InputError: field 'subject': subject 99 has no eligible rounds to fit"
    ]
    assert res.paths[0] is None and res.paths[1] == tmp_path / "subject-28-u.nc" and res.paths[1].is_file()
    assert seen[-1].done == 2 and seen[-1].failed == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["subject-28-u.nc"]  # nothing half-written


def test_a_fit_travels_light_and_rebuilds_in_another_process(local_fits):
    """A fitted IBOModel pickles as rounds + configuration + draws; a fresh process rebuilds its tables."""
    import pickle

    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    m = IBOModel.load(local_fits / "subject-01-tau_pm.nc")
    blob = pickle.dumps(m)
    code = (
        "import pickle, sys; m = pickle.loads(sys.stdin.buffer.read()); "
        "print(m.config.key(), float(m.family_probabilities().sum()), m.tables.values.shape)"
    )
    r = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True, cwd=REPO)
    key, total, shape = r.stdout.decode().split(maxsplit=2)
    assert key == m.config.key() and float(total) == pytest.approx(1.0) and shape.strip() == str(m.tables.values.shape)
    assert len(blob) < 20 * 1024 * 1024


@pytest.mark.slow
def test_ctrl_c_during_a_cluster_run_keeps_finished_fits_and_no_partial_file(two_players, tmp_path):
    """SIGINT while a local cluster fits: exit 130, every file left is a complete fit, no temporary debris."""
    import signal

    from ibo_pymc.tasks.hotspot.model.fit import IBOModel
    from tests.processes import signal_after

    out = tmp_path / "fits"
    rc, err = signal_after(
        [
            sys.executable,
            "-m",
            "ibo_pymc.cli.sample",
            "--subject",
            "all",
            "--data",
            str(two_players),
            "--out",
            str(out),
            "--workers",
            "2",
            "--draws",
            "4000",
            "--tune",
            "300",
            "--chains",
            "2",
            "--seed",
            "1",
        ],
        "fits: 0/2 done",
        signal.SIGINT,
        settle=6,
        stop_timeout=90,
        cwd=tmp_path,
    )  # 6 s: into sampling
    assert rc == 130, err[-2000:]
    left = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert all(n.startswith("subject-") and n.endswith(".nc") for n in left), left
    for n in left:
        assert IBOModel.load(out / n).idata is not None  # complete, readable fits only


@pytest.mark.slow
def test_ctrl_c_at_a_terminal_prints_one_line_not_the_workers_tracebacks(raw_folder, tmp_path):
    """Issue 31, 3.2: Ctrl-C at a terminal signals the whole process group, the local cluster's worker processes
    too; they printed Dask's tracebacks (CancelledError ... KeyboardInterrupt) before the command's own line. The
    workers start with SIGINT ignored: the command alone reacts, with one line and exit 130."""
    import os
    import signal
    import threading

    cmd = [
        sys.executable,
        "-m",
        "ibo_pymc.cli.sample",
        "--subject",
        "all",
        "--model",
        "u",
        "--data",
        str(raw_folder),
        "--out",
        str(tmp_path / "fits"),
        "--workers",
        "2",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, start_new_session=True
    )  # its own process group, as a terminal's foreground job
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while time.time() < deadline and not any("fits: 0/" in ln for ln in lines) and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(6)  # into sampling
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and len(lines) <= 3, err[-2000:]
    assert lines[-1].startswith("ibo-sample: interrupted")
