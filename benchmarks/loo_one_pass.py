"""The engine's per-component PSIS-LOO with moment matching (issue 33, item 2): the density and a unit's
log-likelihood at the same moved draws from one pass of the likelihood, against two (the baseline), in the same
run.

    python benchmarks/loo_one_pass.py [--data DIR] [--fits 2020:conceptual:27,...] [--repeat N]

For each participant named (``study:part:id``, as ``gridsearch_table.py``) its GP fit is made (the defaults),
then :func:`ibo_pymc.engine.loo.psis_components` runs on its components twice: as the model gives them
(:meth:`~ibo_pymc.engine.model.IBOModelBase.component_draws`: the density is the units' log-likelihood summed
plus the priors, the last points' log-likelihood kept) and as before 404b723 (the compiled density, and the
likelihood evaluated again for the unit). Printed: the passes of the likelihood over the draws and the seconds
of each (the median of ``--repeat``), their ratio, and the largest difference of the pointwise elpd and Pareto
k between the two (rounding only). The default participants are ones whose LOO moment-matches.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from _args import positive_int  # beside this script
from gridsearch_table import observations

REPO = Path(__file__).resolve().parents[1]
DEFAULT = "2020:conceptual:27,2020:spatial:4"


def baseline_pieces(model, pieces, calls: list):
    """The components as ``component_draws`` gave them before 404b723: the compiled density, and a likelihood
    pass of its own for every unit's log-likelihood (each density evaluation noted in ``calls``: a pass too)."""
    from dataclasses import replace

    out = []
    for piece in pieces:
        priors = model.priors(piece.component)
        value = model.density(piece.component).value

        def loglik(zz, fam=piece.component, priors=priors):
            return model.loglik(fam, {n: p.from_unconstrained(zz[:, j]) for j, (n, p) in enumerate(priors.items())})

        def density(zz, value=value):
            calls.append("density")
            return value(zz)

        out.append(replace(piece, log_density=density, loglik=loglik))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the folder of study folders")
    ap.add_argument("--fits", default=DEFAULT, help=f"participants, study:part:id (default {DEFAULT})")
    ap.add_argument("--repeat", type=positive_int, default=3, help="runs of each variant (the median is printed)")
    args = ap.parse_args()

    from ibo_pymc.engine.loo import psis_components

    print("participant            passes (before, now)   seconds (before, now)   ratio   max |d elpd_i|, |d k|")
    for spec in args.fits.split(","):
        task, gr = observations(Path(args.data), spec)
        model = task.model(gr)
        model.fit(progress=False)
        calls = []
        inner = model.loglik
        model.loglik = lambda fam, params, calls=calls, inner=inner: calls.append(fam) or inner(fam, params)
        now = model.component_draws()
        before = baseline_pieces(model, now, calls)
        rows = {}
        for name, pieces in (("before", before), ("now", now)):
            times, counts = [], []
            for _ in range(args.repeat):
                calls.clear()
                t = time.perf_counter()
                parts = psis_components(pieces, relevance=float(model.config.relevance), var_name=model.observed)
                times.append(time.perf_counter() - t)
                counts.append(len(calls))
            rows[name] = (counts[0], statistics.median(times), parts)
        (cb, tb, pb), (cn, tn, pn) = rows["before"], rows["now"]
        de = max(float(np.max(np.abs(a.elpd_i - b.elpd_i))) for a, b in zip(pb, pn))
        dk = max(float(np.max(np.abs(a.pareto_k - b.pareto_k))) for a, b in zip(pb, pn))
        print(f"{spec:22s} {cb:6d} {cn:6d}            {tb:8.2f} {tn:8.2f}           {tb / tn:5.2f}", end="")
        print(f"   {de:.1e}, {dk:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
