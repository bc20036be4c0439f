"""``ibo-sample``: fit the PyMC model to one subject (or all) and save the InferenceData."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_task_option,
    add_tune_option,
    add_where_options,
    check_suffix,
    executor,
    fit_settings,
    load_task_subjects,
    positive_int,
    probability,
    report_failures,
    run,
    seed_int,
    subject_arg,
)
from ibo_pymc.engine.config import HDI_PROB
from ibo_pymc.errors import InputError

DEFAULT_DIR = "models"


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-sample",
        description="Fit the inverse-BO model (family marginalised; NUTS per family + bridge sampling) to a "
        "subject and write an ArviZ InferenceData NetCDF.",
    )
    add_task_option(p)
    p.add_argument(
        "--subject",
        type=subject_arg,
        required=True,
        help="subject number (hotspot: 1..28; gridsearch: the participant's id), numbers separated by commas, or 'all'",
    )
    add_where_options(p)
    p.task_option(
        "--surrogate",
        tasks={"gridsearch": "GP"},
        choices=("GP", "BMT"),
        help="gridsearch: the surrogate, GP (RBF kernel; default) or BMT (Bayesian mean tracker)",
    )
    p.task_option(
        "--model",
        tasks={"hotspot": "tau_pm"},
        choices=("u", "tau", "tau_pm"),
        help="hotspot: u, tau (ũ) or tau_pm (ũ±; default)",
    )
    p.add_argument("--draws", type=positive_int, default=1000, help="kept draws per chain (default 1000)")
    add_tune_option(p)
    p.add_argument("--chains", type=positive_int, default=4, help="chains (default 4)")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0); same seed, same draws")
    p.add_argument(
        "--sampler", choices=("nutpie", "pymc"), default="nutpie", help="NUTS implementation (default nutpie)"
    )
    add_data_option(p)
    p.add_argument(
        "--out",
        metavar="PATH",
        default=None,
        help=f"output NetCDF (one subject) or folder (--subject all); default ./{DEFAULT_DIR}/subject-NN-MODEL.nc "
        "under the current directory",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 3 if a fit misses its convergence targets (FitConfig: R-hat <= 1.01, bulk and tail "
        "ESS >= 400; names the quantities)",
    )
    p.add_argument(
        "--hdi-prob",
        type=probability,
        default=None,
        metavar="P",
        help=f"mass of the highest-density intervals in the printed summary and (gridsearch) the fits table "
        f"(default {HDI_PROB:g}, every task)",
    )
    p.add_argument(
        "--save-full",
        action="store_true",
        help="one subject: also store the posterior predictive and the log-likelihood in float64 (a file 4-8 "
        "times larger; by default the predictive is drawn again on demand and the log-likelihood is packed "
        "in 16 bits)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_execution_options(p)
    return p


def _fit_and_save(model, path: str, full: bool = False) -> str:
    """One execution-layer job: fit ``model`` and save it at ``path`` (one subject sent to a cluster)."""
    model.fit(progress=False)
    return str(model.save(path, full=full))


def _one(args, task, model, path: Path) -> int:
    """One subject: fit here, with the sampler's progress and every chain on its own core (with --scheduler, on
    the cluster), save, and print the fit."""
    from ibo_pymc.execution import Job, run_jobs

    unit, s = task.unit_name, model.fit_attrs()["subject"]
    t0 = time.perf_counter()
    if args.scheduler is None:
        if not args.quiet:
            print(
                f"fitting {unit} {s} ({getattr(args, task.model_option)}): {model.config.chains} chains x "
                f"{model.config.draws} draws",
                file=sys.stderr,
                flush=True,
            )
        model.fit(progress=not args.quiet)
        model.save(path, full=args.save_full)
    else:
        with executor(args) as ex:
            run_jobs(
                [Job(f"{unit} {s}", _fit_and_save, (model, str(path), args.save_full))], ex, label="fits"
            ).raise_failures()
        model = task.load_fit(path)
    if not args.quiet:
        print(model.report(time.perf_counter() - t0, hdi_prob=args.hdi_prob or HDI_PROB))
    print(f"wrote {path}", file=sys.stderr)
    bad = model.failing()
    if bad and args.strict:
        print(f"ibo-sample: error: {unit} {s} did not converge: {', '.join(bad)}", file=sys.stderr)
        return 3
    return 0


def _many(args, task, dataset, subjects, choice: dict, where: dict, settings: dict) -> int:
    """Several subjects (or all): one job per fit on the executor, saved fits reused, each written as it
    completes; then the task's table of the fits (convergence, and what else the task reports) beside them."""
    from ibo_pymc.io import sweep_partial, write_csv

    folder = Path(args.out or DEFAULT_DIR)
    if args.hdi_prob is not None and not task.fits_table_intervals:
        raise InputError(
            f"does not apply to {task.name}'s fits table ({task.fits_table_name(**choice, **where)}: convergence, "
            "no intervals); it sets the summary printed for one subject",
            field="--hdi-prob",
        )
    if args.save_full:
        raise InputError(
            "applies to one subject's fit; a cohort's fits are saved compact (save one in full with "
            "--subject N --save-full)",
            field="--save-full",
        )
    if folder.exists() and not folder.is_dir():
        raise InputError("exists and is not a folder", path=folder, field="--out")
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    try:
        with executor(args) as ex:
            out = task.cohort_fits(
                dataset, subjects, folder, models=list(choice.values()), executor=ex, log=log, **where, **settings
            )
            status = report_failures(out.failures, "ibo-sample")
            paths = [p for p in out.results if p is not None]
            intervals = {} if args.hdi_prob is None else {"hdi_prob": args.hdi_prob}
            table = task.fits_table(paths, executor=ex, **intervals) if paths else None
    except KeyboardInterrupt:
        sweep_partial(folder)  # after the workers are gone: nothing half-written stays
        raise
    if table is None:
        return status or 1
    name = folder / task.fits_table_name(**choice, **where)
    write_csv(table, name, index=False, float_format=task.fits_table_float_format)
    bad = table[~table["converged"].astype(bool)]
    for row in bad.itertuples():
        print(
            f"ibo-sample: {'error' if args.strict else 'warning'}: {task.unit_name} {row[1]} did not converge"
            + (f": {row.failing}" if getattr(row, "failing", "") else ""),
            file=sys.stderr,
        )
    print(
        f"wrote {len(table)} fits ({len(table) - len(bad)} converged) and {name} ({time.perf_counter() - t0:.0f} s)",
        file=sys.stderr,
    )
    return status or (3 if args.strict and len(bad) else 0)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    task, dataset, subjects, where = load_task_subjects(args, named_only=True)
    choice = {task.model_option: getattr(args, task.model_option)}
    settings = {**fit_settings(args), "sampler": args.sampler}
    if len(subjects) > 1 or args.subject == "all":
        return _many(args, task, dataset, subjects, choice, where, settings)
    model = task.model(task.observations(dataset, subjects[0], **where), **choice, **settings)
    check_suffix(args.out, "--out", (".nc",))
    return _one(args, task, model, Path(args.out) if args.out else Path(DEFAULT_DIR) / model.file_name())


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-sample")


if __name__ == "__main__":
    sys.exit(main())
