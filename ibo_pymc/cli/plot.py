"""``ibo-plot``: a fitted subject's moves with the credible and prediction regions (or the cohort grid)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ibo_pymc.cli._common import (
    ArgumentParser,
    add_data_option,
    add_execution_options,
    add_fit_options,
    add_task_option,
    add_where_options,
    check_suffix,
    executor,
    fit_settings,
    load_task_subjects,
    report_failures,
    run,
    subject_arg,
)


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="ibo-plot",
        description="Draw a fitted subject. hotspot: the moves (delta_r1, theta2) with the 95% prediction region "
        "of theta2 and the 95% credible band of the acquisition curve (paper Figs 7-8); several subjects: the grid "
        "of Fig 12. gridsearch: the family probabilities and the marginal posteriors of the participant's fit; "
        "several participants: their family probabilities. Saved fits are reused.",
    )
    add_task_option(p)
    add_where_options(p)
    p.task_option(
        "--surrogate", tasks={"gridsearch": "GP"}, choices=("GP", "BMT"), help="gridsearch: the surrogate (default GP)"
    )
    p.add_argument(
        "--subject",
        type=subject_arg,
        required=True,
        help="subject number (1..28): its moves and regions; numbers separated by commas or 'all': the cohort grid",
    )
    p.task_option(
        "--model",
        tasks={"hotspot": "tau_pm"},
        choices=("u", "tau", "tau_pm"),
        help="hotspot: u, tau (ũ) or tau_pm (ũ±; default)",
    )
    p.add_argument("--out", metavar="FILE", required=True, help="figure file, .png or .pdf")
    add_data_option(p)
    add_fit_options(p)
    add_execution_options(p)
    return p


def _main(argv: Sequence[str] | None) -> int:
    import matplotlib

    matplotlib.use("Agg")
    args = build_parser().parse_args(argv)
    check_suffix(args.out, "--out", (".png", ".pdf"))
    # through the task object: the fits (saved ones reused), one subject's figure or the cohort's
    from pathlib import Path

    from ibo_pymc.io import save_figure

    task, table, subjects, where = load_task_subjects(args, named_only=True)
    folder = Path(args.fits).resolve()
    folder.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    with executor(args) as ex:
        done = task.cohort_fits(
            table,
            subjects,
            folder,
            models=(getattr(args, task.model_option),),
            executor=ex,
            log=log,
            **where,
            **fit_settings(args),
        )
    if report_failures(done.failures, "ibo-plot"):
        return 1
    models = [task.load_fit(p) for p in done.results]
    fig = task.plot_fit(models[0], seed=args.seed) if len(models) == 1 else task.plot_cohort(models, seed=args.seed)
    save_figure(fig, args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv, "ibo-plot")


if __name__ == "__main__":
    sys.exit(main())
