"""``ibo-cohort``: population-level model selection (random-effects BMS) of a cohort.

``ibo-cohort bms --lme FILE.csv --csv OUT.csv``
    random-effects BMS of any table of log model evidences (a header of model
    names, an optional ``subject`` column, one row per subject). OUT.csv has one
    row per model (or family, with ``--families``):
    ``model,alpha,expected_frequency,exceedance_probability,protected_exceedance_probability``.
    The Bayesian omnibus risk is printed and written, with the free energies,
    to the sidecar OUT.json (same name, suffix .json).
``ibo-cohort run --data DIR --out DIR [--fits DIR]``
    fits every subject under u, ũ and ũ± (saved fits reused), and writes the log
    evidences and the model-level and family-level BMS tables and figure
    (:data:`ibo_pymc.population.selection.FILES`). With ``--task gridsearch
    --context spatial|conceptual``: every participant under the GP and the mean
    tracker, the same comparisons and files.
``ibo-cohort hierarchical --data DIR --out DIR [--fits DIR] [--split FILE]``
    the hierarchical ũ± model (:mod:`ibo_pymc.engine.hierarchical`): population
    quantities, each subject's shrunken estimates, the shrinkage figure, the
    InferenceData, and with ``--split`` the held-out comparison with the fits alone
    (:data:`ibo_pymc.population.hierarchical_files.HIERARCHICAL_FILES`). With ``--task gridsearch --context
    spatial|conceptual [--surrogate GP|BMT]``: the participants' fits of one surrogate in one context (lambda or
    the mean tracker's error variance, tau, UCB's beta, the family mix), the same files.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

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
    plural,
    positive_int,
    report_failures,
    run,
    seed_int,
    subject_arg,
)
from ibo_pymc.errors import InputError


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-cohort",
        description="Population-level model selection: random-effects Bayesian "
        "model selection (Stephan et al. 2009) with protected exceedance probabilities (Rigoux et al. "
        "2014) and families of models (Penny et al. 2010).",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)

    b = sub.add_parser("bms", help="random-effects BMS of a table of log model evidences")
    b.add_argument(
        "--lme",
        metavar="FILE",
        required=True,
        help="CSV: a header of model names (and optionally 'subject'), one row of log evidences per subject",
    )
    b.add_argument(
        "--csv",
        metavar="OUT",
        required=True,
        help="write one row per model here; the BOR and free energies go to OUT with suffix .json",
    )
    b.add_argument(
        "--families",
        metavar="SPEC",
        default=None,
        help="compare families of models instead, e.g. 'UCB=m1,m2;PI=m3,m4' (every model in one family)",
    )

    r = sub.add_parser("run", help="fit the cohort (or reuse saved fits), then BMS of models and families")
    add_task_option(r)
    add_where_options(r)
    add_data_option(r)
    r.add_argument("--out", metavar="DIR", required=True, help="folder of the tables and the figure")
    r.add_argument(
        "--fits",
        metavar="DIR",
        default=None,
        help="folder of saved fits subject-NN-MODEL.nc, reused when they match, written when missing "
        "(default OUT/fits)",
    )
    r.add_argument(
        "--subject", type=subject_arg, default="all", help="'all' (default) or subject numbers separated by commas"
    )
    r.add_argument("--draws", type=positive_int, default=1000, help="kept draws per chain for new fits (default 1000)")
    add_tune_option(r)
    r.add_argument("--chains", type=positive_int, default=4, help="chains for new fits (default 4)")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    add_execution_options(r)

    h = sub.add_parser(
        "hierarchical",
        help="the hierarchical model of the cohort: population quantities, shrinkage "
        "(hotspot: one model, ũ± by default; gridsearch: one surrogate in one context)",
    )
    add_task_option(h)
    add_where_options(h)
    h.task_option(
        "--surrogate",
        tasks={"gridsearch": "GP"},
        choices=("GP", "BMT"),
        help="gridsearch: the surrogate of the subjects' fits, GP (default) or BMT",
    )
    add_data_option(h)
    h.add_argument("--out", metavar="DIR", required=True, help="folder of the tables, the figure and hierarchical.nc")
    h.add_argument(
        "--fits",
        metavar="DIR",
        default=None,
        help="folder of saved fits (reused when they match, written when missing; default OUT/fits)",
    )
    h.add_argument(
        "--subject", type=subject_arg, default="all", help="'all' (default) or subject numbers separated by commas"
    )
    h.task_option(
        "--model",
        tasks={"hotspot": "tau_pm"},
        choices=("u", "tau", "tau_pm"),
        help="hotspot: the model of the subjects' fits, u, tau (ũ) or tau_pm (ũ±; default)",
    )
    h.task_option(
        "--split",
        metavar="FILE",
        tasks={"hotspot": None},
        help="hotspot: also fit the training rounds of this split (subject,session_id,set) alone and "
        "hierarchically, and compare the held-out lppd of the test rounds (heldout.csv)",
    )
    h.add_argument(
        "--population-draws",
        type=positive_int,
        default=1000,
        help="draws and tuning iterations per chain of the population level (default 1000 each; 4 chains)",
    )
    h.add_argument("--draws", type=positive_int, default=1000, help="kept draws per chain for new fits (default 1000)")
    add_tune_option(h)
    h.add_argument("--chains", type=positive_int, default=4, help="chains for new fits (default 4)")
    h.add_argument("--seed", type=seed_int, default=0, help="random seed (default 0)")
    h.add_argument("--quiet", action="store_true", help="no progress lines")
    add_execution_options(h)

    for q in (b, r):
        q.add_argument(
            "--exceedance",
            choices=("quadrature", "sampling"),
            default="quadrature",
            help="exceedance probabilities for more than two models: one-dimensional quadrature (default, "
            "exact to 1e-7) or Monte Carlo over Dirichlet draws (two models: always the exact Beta tail)",
        )
        q.add_argument(
            "--samples", type=positive_int, default=1_000_000, help="draws for --exceedance sampling (default 1e6)"
        )
        q.add_argument(
            "--seed", type=seed_int, default=0, help="random seed of new fits and of --exceedance sampling (default 0)"
        )
    return p


def parse_families(spec: str) -> dict[str, list[str]]:
    """``'A=m1,m2;B=m3'`` -> {A: [m1, m2], B: [m3]} (that every model is in one family, family_bms checks)."""
    out: dict[str, list[str]] = {}
    for part in spec.split(";"):
        if not part.strip():
            continue
        name, eq, members = part.partition("=")
        if not eq or not name.strip() or not members.strip():
            raise InputError(f"{part.strip()!r}: expected FAMILY=MODEL,MODEL,...", field="--families")
        if name.strip() in out:
            raise InputError(f"family {name.strip()!r} is named twice", field="--families")
        out[name.strip()] = [m.strip() for m in members.split(",") if m.strip()]
    return out


def _bms_options(args) -> dict:
    return {"exceedance": args.exceedance, "n_samples": args.samples, "seed": args.seed}


def _print(result, what: str) -> None:
    with pd.option_context("display.width", 120):
        print(result.table().to_string(float_format=lambda v: f"{v:.4f}"))
    s = result.summary()
    print(
        f"Bayesian omnibus risk (BOR) {s['bor']:.4g} (F1 {s['free_energy']:.3f}, F0 {s['null_free_energy']:.3f}; "
        f"{plural(s['n_subjects'], 'subject')}, {what}; exceedance: {s['exceedance_method']})"
    )


def _cmd_bms(args) -> int:
    from ibo_pymc.io import atomic_path
    from ibo_pymc.population.bms import family_bms, random_effects_bms
    from ibo_pymc.population.evidence import read_lme

    check_suffix(args.csv, "--csv", (".csv",))
    lme = read_lme(args.lme)
    if args.families:
        part = parse_families(args.families)
        try:
            result = family_bms(lme, part, **_bms_options(args))
        except ValueError as exc:
            raise InputError(str(exc), field="--families") from None
        what = f"{len(part)} families of {lme.shape[1]} models"
    else:
        result = random_effects_bms(lme, **_bms_options(args))
        what = f"{lme.shape[1]} models"
    _print(result, what)
    out = Path(args.csv)
    sidecar = out.with_suffix(".json")
    with atomic_path(out) as tmp_csv, atomic_path(sidecar) as tmp_json:  # both files, or neither
        result.table().reset_index().to_csv(tmp_csv, index=False, float_format="%.10g")
        tmp_json.write_text(json.dumps(result.summary(), indent=2) + "\n")
    print(f"wrote {out} and {sidecar}", file=sys.stderr)
    return 0


def _out_and_fits(args) -> tuple[Path, Path]:
    """``--out`` (checked writable before any fitting) and ``--fits`` (default OUT/fits)."""
    from ibo_pymc.io import check_writable

    out = Path(args.out)
    check_writable(out)
    return out, Path(args.fits) if args.fits else out / "fits"


def _cmd_run(args) -> int:
    """``ibo-cohort run`` through the task object: every subject's fits under the task's models (saved fits
    reused), then the shared comparisons and files."""
    from ibo_pymc.io import write_csv
    from ibo_pymc.population.evidence import evidence_table
    from ibo_pymc.population.selection import FILES, cohort_bms, write_cohort

    out, fits = _out_and_fits(args)
    task, table, subjects, where = load_task_subjects(args)
    fits = fits.resolve()
    fits.mkdir(parents=True, exist_ok=True)
    labels = task.model_labels
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    with executor(args) as ex:
        if log:
            log(
                f"fitting or loading {', '.join(labels[m] for m in task.models)} for "
                f"{plural(len(subjects), task.unit_name)} in {fits}"
            )
        done = task.cohort_fits(table, subjects, fits, executor=ex, log=log, **where, **fit_settings(args))
    status = report_failures(done.failures, "ibo-cohort")
    if done.failures:
        return status or 1
    result = cohort_bms(evidence_table(done.results, task.models), **_bms_options(args))
    n_pairs = len(task.models) * len(task.families)
    print(f"models (family marginalised{''.join(f'; {v}' for v in where.values())}):")
    _print(result.models, ", ".join(labels.get(n, n) for n in result.models.names))
    print("\nacquisition families (any model):")
    _print(result.families, f"{n_pairs} (model, family) pairs partitioned by family")
    print("\nmodels (family as a random effect):")
    _print(result.model_families, f"{n_pairs} (model, family) pairs partitioned by model")
    write_cohort(result, out, labels)
    written = list(FILES.values())
    # a task's own findings from the same fits (the grid task on Wu et al. 2018's data: the generalisation table)
    findings = getattr(task, "cohort_tables", None)
    for name, df in (findings(table, done.results) if findings else {}).items():
        write_csv(df, out / name, index=False, float_format="%.6g")
        written.append(name)
    print(f"wrote {', '.join(written)} in {out}", file=sys.stderr)
    return status


def _cmd_hierarchical(args) -> int:
    """``ibo-cohort hierarchical`` through the task object: every subject's fit under one model (saved fits
    reused), the population level, its files; with ``--split`` (hotspot) the held-out comparison."""
    from ibo_pymc.engine.hierarchical import fit_hierarchical

    out, fits_dir = _out_and_fits(args)
    fits_dir = fits_dir.resolve()
    task, data, subjects, where = load_task_subjects(args)
    if len(subjects) < 2:
        raise InputError("a hierarchical model needs at least two subjects", field="--subject")
    model = getattr(args, task.model_option)
    settings = fit_settings(args)
    split = task.load_split(args.split, data) if args.split else None
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    fits_dir.mkdir(parents=True, exist_ok=True)
    with executor(args) as ex:
        if log:
            log(
                f"fitting or loading {task.model_labels.get(model, model)} for {plural(len(subjects), task.unit_name)} "
                f"in {fits_dir}" + (" (all and training rounds)" if split else "")
            )
        done = task.cohort_fits(data, subjects, fits_dir, models=(model,), executor=ex, log=log, **where, **settings)
        train = None
        if split is not None and not done.failures:
            train = task.cohort_fits(
                data, subjects, fits_dir, models=(model,), split=split, executor=ex, log=log, **settings
            )
    failures = done.failures + (train.failures if train is not None else [])
    status = report_failures(failures, "ibo-cohort")
    if failures:
        return status or 1
    whole = [task.load_fit(p) for p in done.results]

    def heldout(population):
        models = [task.load_fit(p) for p in train.results]
        if population.get("log"):
            population = {**population, "log": lambda msg, say=population["log"]: say(f"training rounds: {msg}")}
        fit = fit_hierarchical(models, **population)
        return task.heldout_comparison(fit, models, data, split), fit

    return _hierarchical_files(args, out, whole, heldout if split else None, task.parameter_labels, status)


def _hierarchical_files(args, out, fits, heldout_of, labels, status) -> int:
    """The population level on the subjects' fits, its report and its files (and the held-out comparison when
    ``heldout_of`` is given: a function of the population settings returning the comparison's table and the
    training rounds' hierarchical fit)."""
    import time

    from ibo_pymc.engine.hierarchical import fit_hierarchical
    from ibo_pymc.population.hierarchical_files import HIERARCHICAL_FILES, write_hierarchical

    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    settings = {"draws": args.population_draws, "tune": args.population_draws, "seed": args.seed, "log": log}
    t0 = time.perf_counter()
    h = fit_hierarchical(fits, **settings)
    summary = {"seconds": round(time.perf_counter() - t0, 1), "subjects": len(fits), **h.weights_summary()}
    heldout = None
    if heldout_of is not None:
        heldout, trained = heldout_of(settings)
        summary["heldout_lppd"] = {
            "independent": float(heldout["independent"].sum()),
            "hierarchical": float(heldout["hierarchical"].sum()),
        }
        # the held-out numbers rest on the training fit's weights: say how reliable they are too
        weights = trained.weights_summary()
        keys = ("max_pareto_k", "max_pareto_k_max", "refined", "unreliable")
        summary["heldout_weights"] = {k: weights[k] for k in keys}
    conv = h.convergence()
    print(
        f"population level: {summary['seconds']:.0f} s; worst R-hat {conv['r_hat']:.3f}, smallest ESS "
        f"{min(conv['ess_bulk'], conv['ess_tail']):.0f}, {conv['divergences']} divergences; subjects' importance "
        f"weights: largest Pareto k {summary['max_pareto_k']:.2f} (median over population draws), "
        f"{summary['max_pareto_k_max']:.2f} (largest); {summary['refined']} refined by proposal draws "
        f"({summary['population_fits']} population fits), {summary['unreliable']} still unreliable"
    )
    with pd.option_context("display.width", 140):
        print(h.population().round(3).to_string(index=False))
        if heldout is not None:
            better = int((heldout["difference"] > 0).sum())
            print(
                f"\nheld-out lppd of the test rounds: alone {heldout['independent'].sum():.2f}, hierarchical "
                f"{heldout['hierarchical'].sum():.2f} (better for {better} of {len(heldout)} subjects); training "
                f"fit's weights: largest Pareto k {summary['heldout_weights']['max_pareto_k']:.2f} (median), "
                f"{summary['heldout_weights']['max_pareto_k_max']:.2f} (largest), "
                f"{summary['heldout_weights']['unreliable']} unreliable"
            )
    write_hierarchical(h, out, heldout=heldout, summary=summary, labels=labels)
    written = [v for k, v in HIERARCHICAL_FILES.items() if k != "heldout" or heldout is not None]
    print(
        f"wrote {', '.join(written)} in {out}",
        file=sys.stderr,
    )
    return status


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return {"bms": _cmd_bms, "run": _cmd_run, "hierarchical": _cmd_hierarchical}[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-cohort")


if __name__ == "__main__":
    sys.exit(main())
