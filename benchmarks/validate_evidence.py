"""Validate the log model evidences (issue 18): the two paths on simulated subjects, and two seeds on the study.

    python benchmarks/validate_evidence.py --fits FOLDER [--subjects 12] [--workers 2] [--csv
    models/cohort/evidence_validation.csv]

1. Simulated subjects: the rounds (delta_r1) of study subjects 1..N, theta2 drawn
   from the generative model (:func:`ibo_pymc.tasks.hotspot.model.generative.prior_predictive_draw`;
   generating models u, ũ, ũ± in turn, parameters and family from the prior,
   seeded), each fitted under u, ũ and ũ± with the default configuration; the
   bridge-sampled evidences against the fine grid's
   (:func:`ibo_pymc.tasks.hotspot.population.fine_grid_evidence.check_evidence`), z = difference / the
   errors combined (bridge standard error; the grid's change at 1.5x the points).
2. Seeds: the study's fits in FOLDER (seed 0, as ``ibo-cohort run`` writes them)
   against the same fits with seed 1 (written to FOLDER-seed1, reused when there),
   z = difference / the two standard errors combined.

It prints one summary line per check and writes every row to --csv (columns check, subject, model, family,
first, first_error, second, second_error, difference, z: first/second are the bridge and fine-grid values, or
the seed-0 and seed-1 values), and the simulated subjects' truths beside it (..._truths.csv).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _args import positive_int  # beside this script


def _summary(df: pd.DataFrame, what: str) -> str:
    z = df["z"].abs()
    diff = df["difference"].abs()
    return (
        f"{what}: {len(df)} evidences, |z| < 2 for {np.mean(z < 2):.0%}, < 3 for {np.mean(z < 3):.0%}, "
        f"max |z| {z.max():.2f}; |difference| median {diff.median():.3f}, max {diff.max():.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fits", type=Path, required=True)
    ap.add_argument("--data", default="../shared/data/hotspot_raw")
    ap.add_argument("--subjects", type=positive_int, default=12)
    ap.add_argument("--workers", type=positive_int, default=2)
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()

    from ibo_pymc.execution import Job, open_executor, run_jobs
    from ibo_pymc.io import write_csv
    from ibo_pymc.population.evidence import evidence_table
    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations
    from ibo_pymc.tasks.hotspot.forward.variants import MODELS
    from ibo_pymc.tasks.hotspot.model.config import FitConfig, fit_file_name
    from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort
    from ibo_pymc.tasks.hotspot.model.generative import prior_predictive_draw
    from ibo_pymc.tasks.hotspot.population.fine_grid_evidence import check_evidence

    data = load_hotspot(args.data)
    t0 = time.perf_counter()
    sims, truths = [], []
    for i, s in enumerate(list(data.subjects)[: args.subjects]):
        obs = data.observations(s)
        gen = MODELS[i % 3]
        truth, theta2 = prior_predictive_draw(obs, gen, random_seed=1000 + s)
        sims.append(
            SubjectObservations(
                subject=s,
                user_id=obs.user_id,
                session_id=obs.session_id,
                round_index=obs.round_index,
                delta_r1=obs.delta_r1,
                theta2=theta2,
            )
        )
        truths.append({"subject": s, "generating_model": gen, **truth})
    tasks = [Job(f"simulated {o.subject} {m}", check_evidence, (o, m)) for o in sims for m in MODELS]
    with open_executor(args.workers) as ex:
        out = run_jobs(tasks, ex, label="simulated subjects")
        sim = pd.concat([r for r in out.results if r is not None], ignore_index=True)
        sim = sim.rename(
            columns={"bridge": "first", "bridge_error": "first_error", "grid": "second", "grid_error": "second_error"}
        )
        sim.insert(0, "check", "bridge vs fine grid (simulated)")
        print(
            _summary(sim, "bridge vs fine grid, simulated subjects"), f"({time.perf_counter() - t0:.0f} s)", flush=True
        )
        t1 = time.perf_counter()
        seed1 = args.fits.with_name(args.fits.name + "-seed1")
        jobs = cohort_jobs(data, list(data.subjects), MODELS, FitConfig(seed=1))
        fits = fit_cohort(jobs, seed1, executor=ex)
    # the seed-0 fits of all rounds by their names (the folder may also hold fits of training rounds, "-train")
    seed0 = [args.fits / fit_file_name(s, m) for s in data.subjects for m in MODELS]
    missing = [p.name for p in seed0 if not p.is_file()]
    if missing:
        raise SystemExit(f"{args.fits}: missing {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
    a = evidence_table(seed0, MODELS).set_index(["subject", "model", "family"])
    b = evidence_table([p for p in fits.paths if p is not None], MODELS).set_index(["subject", "model", "family"])
    both = a.merge(b, left_index=True, right_index=True, suffixes=("_0", "_1"))
    seeds = pd.DataFrame(
        {
            "check": "seed 0 vs seed 1 (study)",
            "first": both["log_evidence_0"],
            "first_error": both["error_0"],
            "second": both["log_evidence_1"],
            "second_error": both["error_1"],
        }
    ).reset_index()
    seeds["difference"] = seeds["first"] - seeds["second"]
    seeds["z"] = seeds["difference"] / np.hypot(seeds["first_error"], seeds["second_error"])
    print(_summary(seeds, "seed 0 vs seed 1, the study's 84 fits"), f"({time.perf_counter() - t1:.0f} s)", flush=True)
    table = pd.concat([sim, seeds], ignore_index=True)
    if args.csv:
        write_csv(table, args.csv, float_format="%.6g")
        write_csv(pd.DataFrame(truths), args.csv.with_name(args.csv.stem + "_truths.csv"), float_format="%.6g")
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
