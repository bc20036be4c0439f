"""How far Laplace screening's evidences are from the bridge-sampled ones, and what a tighter screen would skip
(issue 33, item 2: fewer wasted families).

    python benchmarks/gridsearch_screening.py --fits DIR [--data DIR] [--experiment 2d] [--screens 8,10,12,15]
                                               [--csv FILE]

The grid task samples every family whose Laplace log evidence is within ``screen`` (default 20) nats of the
best family's; the others take the Laplace normal's draws and evidence. For every saved fit in ``--fits`` (the
grid task's files, e.g. a cohort's ``ibo-sample --task gridsearch --subject all`` output) this recomputes each
family's mode and Laplace evidence with the fit's own configuration (milliseconds) and sets it beside the
bridge-sampled evidence of every family the fit sampled. Printed: the Laplace error's range over those families,
and for each screen in ``--screens``, how many sampled families (in how many fits) it would have left to Laplace,
and the largest probability any of them turned out to have relative to the best family (bridge-sampled; against
the ``relevance``, 0.001, below which a family's convergence is not required). ``--csv`` writes one row per
sampled family (atomically). Reads fits only; fits nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from _args import comma_list  # beside this script
from _grid_data import PARTS, study_part

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fits", type=Path, required=True, help="a folder of the grid task's saved fits (*.nc)")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the folder of study folders")
    ap.add_argument("--experiment", default="2d", choices=PARTS)
    ap.add_argument(
        "--screens",
        type=comma_list(float, "number"),
        default="8,10,12,15",
        help="screens to tabulate (nats, comma-separated)",
    )
    ap.add_argument("--csv", default=None, help="write the rows here")
    args = ap.parse_args()

    from ibo_pymc.engine.fitting import PerFamily
    from ibo_pymc.tasks.gridsearch.model import GridSearchModel

    paths = sorted(args.fits.glob(f"*-{args.experiment}-*.nc"))
    if not paths:
        ap.error(f"--fits: no saved fit of {args.experiment} in {args.fits}")
    task, ds = study_part(args.data, args.experiment)  # after the check: loading the study takes seconds
    rows = []
    for path in paths:
        saved = GridSearchModel.load(path)
        a = saved.idata.posterior.attrs
        model = GridSearchModel(task.observations(ds, int(a["subject"]), context=args.experiment), saved.config)
        plan = PerFamily(model, model.config)
        best_laplace = max(v[0] for v in plan.laplace.values())
        ev = saved.idata.component_evidence
        sampled = {
            str(f): float(e)
            for f, e, m in zip(ev["component_family"].values, ev["log_evidence"].values, ev["method"].values)
            if m == "bridge"
        }
        best_bridge = max(sampled.values())
        for fam, bridge in sampled.items():
            lap = plan.laplace[fam][0]
            rows.append(
                {
                    "participant": int(a["subject"]),
                    "surrogate": a["surrogate"],
                    "family": fam,
                    "laplace": lap,
                    "bridge": bridge,
                    "laplace_minus_bridge": lap - bridge,
                    "laplace_gap": best_laplace - lap,
                    "bridge_gap": best_bridge - bridge,
                }
            )
    d = pd.DataFrame(rows)
    q = np.quantile(d.laplace_minus_bridge, [0.0, 0.05, 0.5, 0.95, 1.0])
    print(
        f"{len(paths)} fits, {len(d)} sampled families: Laplace minus bridge log evidence {q[0]:+.2f} (min), "
        f"{q[1]:+.2f} / {q[2]:+.2f} / {q[3]:+.2f} (5/50/95%), {q[4]:+.2f} (max)"
    )
    for screen in args.screens:
        skip = d[d.laplace_gap > screen]
        fits = len(skip[["participant", "surrogate"]].drop_duplicates())
        worst = float(np.exp(-skip.bridge_gap.min())) if len(skip) else 0.0
        print(
            f"screen {screen:g}: {len(skip)} of the sampled families would be left to Laplace, in {fits} fits; "
            f"the most probable of them {worst:.1e} (bridge-sampled, relative to the best family)"
        )
    if args.csv:
        from ibo_pymc.io import write_csv

        write_csv(d, args.csv, index=False, float_format="%.6g")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
