"""Speed of the grid task (issue 20): the likelihood + gradient of one participant, and the cohort reproduction.

    python benchmarks/gridsearch_speed.py [--data DIR] [--subjects N] [--workers 2]

1. One participant (the study's participant 1, spatial, 9 rounds x 19 predicted choices), GP-UCB:
   the fused kernel's log-likelihood and gradient in (lambda, beta, tau), against the baseline measured in
   the same run: direct NumPy solves per trial (``gp_posterior_reference``) and a softmax, with the
   gradient by central differences (7 likelihoods). Target: under 1 ms.
2. The published protocol (``ibo-reproduce --task gridsearch``) for ``--subjects`` participants (default
   all 129: 129 x 2 contexts x 2 models x 10 fits each), on ``--workers`` processes; the time is
   extrapolated to the cohort when fewer are run. Target: under 15 minutes on this machine's 2 cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _args import positive_int  # beside this script
from _timing import per_call

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "cognitivemaps"))
    ap.add_argument("--subjects", type=positive_int, default=None, help="participants to reproduce (default all)")
    ap.add_argument("--workers", type=positive_int, default=2)
    args = ap.parse_args()

    from scipy import special

    from ibo_pymc.cli._common import executor
    from ibo_pymc.tasks.gridsearch.data import grid_rounds, load, subjects
    from ibo_pymc.tasks.gridsearch.density import log_density_grad, pack
    from ibo_pymc.tasks.gridsearch.likelihood import loglik
    from ibo_pymc.tasks.gridsearch.mle import reproduce
    from ibo_pymc.tasks.gridsearch.surrogate import gp_posterior_reference

    table = load(args.data)
    gr = grid_rounds(table, 1, "spatial")
    ch, y = gr.choices, gr.y

    def fused():
        return loglik(ch, y, "GP", "UCB", 0.9, 0.3, 0.05, grad=True)

    buf = pack(ch, y, "GP", "UCB", np.array([[0.0, 1.0], [-1.6, 1.5], [-3.0, 1.5]]))
    x = np.log([0.9, 0.3, 0.05])

    def density():
        return log_density_grad(buf, x)

    def ref_ll(theta, beta, tau):
        mu, var = gp_posterior_reference(ch, y, theta)
        q = mu + beta * np.sqrt(var)
        lp = special.log_softmax(q / tau, axis=-1)
        return np.take_along_axis(lp, ch[:, 1:, None], axis=-1).sum()

    def baseline():
        v = ref_ll(0.9, 0.3, 0.05)
        for j in range(3):
            p = np.array([0.9, 0.3, 0.05])
            h = 1e-6 * p[j]
            up, dn = p.copy(), p.copy()
            up[j] += h
            dn[j] -= h
            ref_ll(*up), ref_ll(*dn)
        return v

    t_fused, t_dens, t_base = per_call(fused, 2000), per_call(density, 2000), per_call(baseline, 5)
    print("1. likelihood + gradient, participant 1 (spatial, 171 choices), GP-UCB")
    print(f"   fused kernel:             {1e3 * t_fused:8.3f} ms   (target < 1 ms)")
    print(f"   sampler's log-density:    {1e3 * t_dens:8.3f} ms   (kernel + priors, as nutpie calls it)")
    print(f"   baseline (NumPy + FD):    {1e3 * t_base:8.3f} ms")
    print(f"   speed-up over baseline:   {t_base / t_fused:8.1f} x")

    ids = subjects(table)
    chosen = ids if args.subjects is None else ids[: args.subjects]
    t = time.perf_counter()
    with executor(argparse.Namespace(workers=args.workers, scheduler=None)) as ex:  # with the progress line
        fits, _ = reproduce(table, chosen, executor=ex)
    el = time.perf_counter() - t
    scale = len(ids) / len(chosen)
    print(
        f"2. published protocol, {len(chosen)} participants x 2 contexts x 2 models ({len(fits)} rows), "
        f"{args.workers} workers: {el:.0f} s"
        + (f"; extrapolated to all {len(ids)}: {el * scale:.0f} s" if scale > 1 else "")
    )
    print(f"   cohort time / 15-minute target: {el * scale / 900:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
