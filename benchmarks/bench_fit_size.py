"""Issue 33, item 3: the size of a saved fit, compact (the default) against full (what every fit was before).

    python benchmarks/bench_fit_size.py --data ../shared/data/hotspot_raw [--subject 8] [--model tau_pm]

Fits one subject (default 8, the study's largest: 635 rounds) once and saves it both ways in the same run:
``save(path, full=True)`` keeps the log-likelihood in float64 and the posterior predictive, as every fit was
written before saving became compact; ``save(path)`` packs the log-likelihood in 16 bits and leaves the
predictive to be drawn on demand. Prints each file's size and write time, the ratio, and what the packing
does to plain PSIS-LOO (``az.loo`` on each file): elpd difference against its SE, largest Pareto k change.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="folder of the hotspot study's raw logs")
    p.add_argument("--subject", type=int, default=8)
    p.add_argument("--model", default="tau_pm")
    args = p.parse_args(argv)

    import arviz as az
    import numpy as np

    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.model.fit import IBOModel

    obs = load_hotspot(args.data).observations(args.subject)
    m = IBOModel(obs, args.model)
    t0 = time.perf_counter()
    m.fit(progress=False)
    print(f"subject {args.subject} ({obs.n_rounds} rounds, {args.model}): fitted in {time.perf_counter() - t0:.1f} s")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        # compact first: saving in full draws the posterior predictive into the fit (timed with the write)
        for name, full in (("compact (default)", False), ("full (before)", True)):
            path = Path(tmp) / f"{'full' if full else 'compact'}.nc"
            t0 = time.perf_counter()
            m.save(path, full=full)
            seconds = time.perf_counter() - t0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loo = az.loo(az.from_netcdf(str(path)), pointwise=True)
            rows[name] = (path.stat().st_size / 1e6, seconds, loo)
    print(f"{'file':<20}{'MB':>8}{'write s':>10}")
    for name, (mb, s, _) in rows.items():
        print(f"{name:<20}{mb:>8.2f}{s:>10.2f}")
    (b_mb, _, b), (a_mb, _, a) = rows.values()
    print(f"size ratio full / compact: {a_mb / b_mb:.2f}")
    dk = np.abs(a.pareto_k.values - b.pareto_k.values).max()
    print(f"az.loo: elpd {a.elpd_loo:.4f} (full) vs {b.elpd_loo:.4f} (compact); difference / SE "
          f"{abs(a.elpd_loo - b.elpd_loo) / a.se:.1e}; largest Pareto k change {dk:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
