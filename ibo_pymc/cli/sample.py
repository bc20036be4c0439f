"""``ibo-sample``: fit the PyMC model to one subject (or all) and save the InferenceData."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_task_option,
    add_tune_option,
    check_suffix,
    executor,
    fit_settings,
    load_subjects,
    load_task_subjects,
    positive_int,
    report_failures,
    run,
    seed_int,
    subject_arg,
)
from ibo_pymc.errors import InputError

DEFAULT_DIR = "models"


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-sample",
        description="Fit the inverse-BO model (family marginalised; NUTS per family + bridge sampling) to a "
        "subject and write an ArviZ InferenceData NetCDF.",
    )
    add_task_option(p)
    p.add_argument("--subject", type=subject_arg, required=True,
                   help="subject number (hotspot: 1..28; gridsearch: the participant's id), numbers separated by "
                   "commas, or 'all'")
    p.task_option("--context", tasks={"gridsearch": "spatial"}, choices=("spatial", "conceptual"),
                  help="gridsearch: which version of the task (default spatial)")
    p.task_option("--surrogate", tasks={"gridsearch": "GP"}, choices=("GP", "BMT"),
                  help="gridsearch: the surrogate, GP (RBF kernel; default) or BMT (Bayesian mean tracker)")
    p.task_option("--model", tasks={"hotspot": "tau_pm"}, choices=("u", "tau", "tau_pm"),
                  help="hotspot: u, tau (ũ) or tau_pm (ũ±; default)")
    p.add_argument("--draws", type=positive_int, default=1000, help="kept draws per chain (default 1000)")
    add_tune_option(p)
    p.add_argument("--chains", type=positive_int, default=4, help="chains (default 4)")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0); same seed, same draws")
    p.add_argument("--sampler", choices=("nutpie", "pymc"), default="nutpie", help="NUTS implementation (default nutpie)")
    add_data_option(p)
    p.add_argument(
        "--out",
        metavar="PATH",
        default=None,
        help=f"output NetCDF (one subject) or folder (--subject all); default ./{DEFAULT_DIR}/subject-NN-MODEL.nc "
        "under the current directory",
    )
    p.add_argument("--strict", action="store_true",
                   help="exit 3 if a fit misses its convergence targets (FitConfig: R-hat <= 1.01, bulk and tail "
                   "ESS >= 400; names the quantities)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_execution_options(p)
    return p


def fit_path(out: str | None, subject: int, model: str, many: bool) -> Path:
    from ibo_pymc.tasks.hotspot.model.config import fit_file_name

    name = fit_file_name(subject, model)
    if out is None:
        return Path(DEFAULT_DIR) / name
    if many:
        return Path(out) / name
    if not out.endswith(".nc"):
        raise InputError(f"--out {out!r}: expected a file name ending in .nc", field="--out")
    return Path(out)


def headline(diag: pd.DataFrame) -> str:
    d = diag[diag["checked"]]
    skipped = [q[6:] for q in diag.index[~diag["checked"]]]
    return (
        f"R-hat max {d['r_hat'].max():.3f}, bulk ESS min {d['ess_bulk'].min():.0f}, "
        f"tail ESS min {d['ess_tail'].min():.0f}, divergences {diag.attrs['divergences']} "
        f"({100 * diag.attrs['divergences'] / diag.attrs['draws']:.2f}% of draws)"
        + (f"; not checked (posterior probability < 0.001): {', '.join(skipped)}" if skipped else "")
    )


def print_fit(m, diag: pd.DataFrame, probs: dict, elapsed: float) -> None:
    summ = m.summary()
    summ = summ[summ["probability"] >= 1e-3]
    print(f"\nsubject {m.obs.subject} (user {m.obs.user_id}), model {m.config.model}: "
          f"{m.obs.n_rounds} rounds, {diag.attrs['draws']} draws, {elapsed:.1f} s")
    print("posterior family probabilities: " + ", ".join(f"{f} {p:.3f}" for f, p in probs.items()))
    with pd.option_context("display.width", 140, "display.max_columns", 20):
        cols = [c for c in summ.columns if c != "probability"]
        ess = {c: (lambda v: f"{v:.0f}") for c in cols if c.startswith("ess")}  # effective sizes are counts
        print(summ[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}", formatters=ess))
    print(headline(diag))
    note = same_curve_note(summ, probs)
    if note:
        print(note)


def same_curve_note(summ: pd.DataFrame, probs: dict) -> str | None:
    """A line for the user when PI and UCB share the posterior because they describe one curve: PI with xi near
    0 and UCB with p near 0.5 both choose the argmax of the surrogate's mean (the data cannot tell them apart,
    so their probabilities split the mass; the notebook on subject 28 explains it)."""
    def mean_of(family, name):
        rows = summ[(summ["family"] == family) & (summ["parameter"] == name)]
        return float(rows["mean"].iloc[0]) if len(rows) else None

    xi, p = mean_of("PI", "xi_pi"), mean_of("UCB", "p_ucb")
    if xi is None or p is None or min(probs.get("PI", 0.0), probs.get("UCB", 0.0)) < 0.05:
        return None
    if xi < 0.1 and p < 0.51:
        return (f"note: PI (xi {xi:.3f}) and UCB (p {p:.3f}) are here the same curve, the argmax of the posterior "
                "mean; the data cannot tell them apart, so their probabilities share one explanation (pure "
                "exploitation)")
    return None


def _convergence_row(m, diag, probs, bad) -> dict:
    checked = diag[diag["checked"]]
    # no timings in the table: the same seed must give the same bytes (timings are printed)
    return {"subject": m.obs.subject, "model": m.config.model,
            "r_hat_max": checked["r_hat"].max(), "ess_bulk_min": checked["ess_bulk"].min(),
            "ess_tail_min": checked["ess_tail"].min(), "divergences": diag.attrs["divergences"],
            "draws": diag.attrs["draws"], "thin": m.idata.posterior.attrs["thin"],
            **{f"p_{f}": p for f, p in probs.items()}, "failing": " ".join(bad)}


def _sample_task(args) -> int:
    """ibo-sample for a task whose model is an :class:`~ibo_pymc.engine.model.IBOModelBase` (the grid task),
    through the task object."""
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.io import write_csv

    task, table, subjects = load_task_subjects(args)
    settings = {**fit_settings(args), "surrogate": args.surrogate, "sampler": args.sampler}
    where = {"context": args.context}
    models = {s: task.model(task.observations(table, s, **where), **settings) for s in subjects}
    many = len(subjects) > 1 or args.subject == "all"
    if many:
        out_dir = Path(args.out or DEFAULT_DIR)
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError("exists and is not a folder", path=out_dir, field="--out")
        paths = [out_dir / models[s].file_name() for s in subjects]
    else:
        check_suffix(args.out, "--out", (".nc",))
        paths = [Path(args.out) if args.out else Path(DEFAULT_DIR) / models[subjects[0]].file_name()]
    t0 = time.perf_counter()
    if not many and args.scheduler is None:  # one participant here; with --scheduler, on the cluster
        m = models[subjects[0]]
        label = ", ".join(str(v) for v in where.values()) + f", {args.surrogate}"
        if not args.quiet:
            print(f"fitting participant {subjects[0]} ({label}): families {', '.join(m.families)}", file=sys.stderr,
                  flush=True)
        m.fit(progress=not args.quiet)
        m.save(paths[0])
        diag = m.diagnostics()
        if not args.quiet:
            req = diag[diag["required"]]
            print(f"\nparticipant {subjects[0]}, {label}: {time.perf_counter() - t0:.1f} s")
            print("posterior family probabilities: "
                  + ", ".join(f"{f} {p:.3f}" for f, p in m.family_probabilities().items()))
            summ = m.summary()
            summ = summ[summ["probability"] >= m.config.relevance]
            with pd.option_context("display.width", 140):
                print(summ.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            print(f"R-hat max {req['r_hat'].max():.3f}, bulk ESS min {req['ess_bulk'].min():.0f}, tail ESS min "
                  f"{req['ess_tail'].min():.0f}, divergences {int(diag['divergences'].sum())} (families with "
                  f"probability >= {m.config.relevance})")
        print(f"wrote {paths[0]}", file=sys.stderr)
        if args.strict and not m.converged():
            print(f"ibo-sample: error: participant {subjects[0]} did not converge", file=sys.stderr)
            return 3
        return 0
    jobs = [Job(f"participant {s}, {args.context}", task.fit_job, (models[s].obs, str(p)), settings)
            for s, p in zip(subjects, paths)]
    with executor(args) as ex:
        out = run_jobs(jobs, ex, label=f"{args.task} fits")
    status = report_failures(out.failures, "ibo-sample")
    rows = [r for r in out.results if r is not None]
    if rows:
        folder = Path(args.out or DEFAULT_DIR) if many else paths[0].parent  # one participant: beside its fit
        summ_path = folder / f"summary-{args.task}-{args.context}-{args.surrogate}.csv"
        write_csv(task.fits_table([{k: v for k, v in r.items() if k != "path"} for r in rows]), summ_path,
                  float_format="%.6g")
        print(f"wrote {len(rows)} fits and {summ_path} (posterior intervals, family probabilities, reliable LOO, "
              f"convergence; {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        if args.strict and not all(r["converged"] for r in rows):
            status = status or 3
    return status


def _main(argv: Sequence[str] | None) -> int:
    from ibo_pymc.engine.results import family_probability
    from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel, failing_quantities

    args = build_parser().parse_args(argv)
    if args.task != "hotspot":
        return _sample_task(args)
    data, subjects = load_subjects(args)
    many = len(subjects) > 1 or args.subject == "all"
    cfg = FitConfig(model=args.model, draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed, sampler=args.sampler)
    if not many and args.scheduler is None:
        # one subject: fit here, with the sampler's progress bar and every chain on its own core
        s = subjects[0]
        path = fit_path(args.out, s, args.model, many)
        t0 = time.perf_counter()
        m = IBOModel(data.observations(s), config=cfg)
        if not args.quiet:
            print(f"fitting subject {s} ({args.model}): {cfg.chains} chains x {cfg.draws} draws", file=sys.stderr, flush=True)
        m.fit(progress=not args.quiet)
        m.save(path)
        diag = m.diagnostics()
        bad = failing_quantities(diag, m.config)
        if not args.quiet:
            print_fit(m, diag, family_probability(m.idata), time.perf_counter() - t0)
        print(f"wrote {path}", file=sys.stderr)
        if bad and args.strict:
            print(f"ibo-sample: error: subject {s} {args.model} did not converge: {', '.join(bad)}", file=sys.stderr)
            return 3
        return 0

    # many subjects (or a remote cluster): one task per subject, each fit saved as it completes
    from ibo_pymc.tasks.hotspot.model.fit_many import FitJob, fit_cohort, sweep_partial

    out_dir = Path(args.out) if args.out and many else Path(DEFAULT_DIR)
    jobs = [FitJob(data.observations(s), cfg, file=None if many else str(fit_path(args.out, s, args.model, False)))
            for s in subjects]
    t0 = time.perf_counter()
    try:
        with executor(args) as ex:
            res = fit_cohort(jobs, out_dir, executor=ex,
                             log=None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True)))
    except KeyboardInterrupt:
        sweep_partial(jobs, out_dir)  # after the workers are gone: nothing half-written stays
        raise
    if not args.quiet and any(res.reused):
        print(f"reused {sum(res.reused)} saved fits made from the same rounds with the same configuration",
              file=sys.stderr)
    rows = []
    status = report_failures(res.failures, "ibo-sample")
    for job, path in zip(jobs, res.paths):
        if path is None:
            continue
        m = IBOModel.load(path)
        diag = m.diagnostics()
        probs = family_probability(m.idata)
        bad = failing_quantities(diag, m.config)
        if not args.quiet:
            print(f"subject {job.obs.subject:2d} {args.model}: {headline(diag)}"
                  + (f"  NOT CONVERGED: {', '.join(bad)}" if bad else ""), flush=True)
        rows.append(_convergence_row(m, diag, probs, bad))
        if bad and args.strict:
            print(f"ibo-sample: error: subject {job.obs.subject} {args.model} did not converge: {', '.join(bad)}",
                  file=sys.stderr)
            status = status or 3
    if many and rows:
        from ibo_pymc.io import write_csv

        table = pd.DataFrame(rows)
        write_csv(table, out_dir / f"convergence-{args.model}.csv", index=False, float_format="%.4g")
        print(f"wrote {len(rows)} fits and {out_dir / f'convergence-{args.model}.csv'} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    elif rows:
        print(f"wrote {res.paths[0]}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-sample")


if __name__ == "__main__":
    sys.exit(main())
