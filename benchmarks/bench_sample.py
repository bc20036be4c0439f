"""Sampling speed: subject 28 ũ± end to end, the gradient cost, and the cohort.

Prints ratios against baselines measured in the same run:

* gradient: the fused Op / compiled density vs the same log-density written as a
  plain PyTensor graph (lookup + mixture ops, C backend);
* end to end: ``ibo-sample --subject 28`` in a fresh process (warm caches);
* ``--cohort``: all 28 subjects x 3 models with default settings.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def plain_graph_gradient(sd) -> float:
    """µs per logp+gradient of the stacked ũ± density as a plain PyTensor graph."""
    import pymc as pm
    import pytensor.tensor as pt

    from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_logp
    from ibo_pymc.tasks.hotspot.model.lookup import lookup_pytensor

    rt = sd.rt
    neg = sd.neg
    x = sd.theta2
    with pm.Model() as m:
        gamma = pm.Uniform("gamma", 0.01, np.pi / 4, shape=3)
        w = pm.Uniform("w", 0, 1, shape=3)
        tn = pm.Uniform("tau_neg", 0, np.pi / 2, shape=3)
        tp = pm.Uniform("tau_pos", 0, np.pi / 2, shape=3)
        for k, (lo, hi) in enumerate(((0, 30), (0, 30), (0.5, 0.99))):  # PI, EI, UCB
            par = pm.Uniform(f"p{k}", lo, hi)
            T = pt.constant(rt.values[k])
            kw = {"param_lo": rt.param_lo[k], "param_step": rt.param_step[k], "tau_step": rt.tau_step}
            ts = pt.where(neg, lookup_pytensor(T, par, tn[k], **kw), lookup_pytensor(T, par, tp[k], **kw))
            pm.Potential(f"ll{k}", wc_mixture_logp(x, ts, gamma[k], w[k]).sum())
    return _time_model(m)


def _time_model(m, n=3000) -> float:
    import pytensor
    import pytensor.tensor as pt

    vs = m.value_vars
    lp = m.logp()
    fn = pytensor.function(vs, [lp, *pt.grad(lp, vs)], trust_input=True)
    ip = m.initial_point()
    args = [np.asarray(ip[v.name]) for v in vs]
    fn(*args)
    t = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - t) / n * 1e6


def compiled_gradient(sd, layout) -> float:
    from ibo_pymc.tasks.hotspot.model import compiled

    buf, blocks = compiled.pack(sd, layout)
    x = np.random.default_rng(0).normal(size=sum(b.size for b in blocks))
    g = np.zeros_like(x)
    compiled._density(x, buf, g)
    n = 20000
    t = time.perf_counter()
    for _ in range(n):
        compiled._density(x, buf, g)
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "hotspot_raw"))
    ap.add_argument("--cohort", action="store_true", help="also time the 84 default fits")
    args = ap.parse_args()

    from ibo_pymc.tasks.hotspot.data import load_hotspot
    from ibo_pymc.tasks.hotspot.model.builder import SubjectData, build_model

    sd = SubjectData.prepare(load_hotspot(args.data).observations(28), "tau_pm")
    base = plain_graph_gradient(sd)
    op_marg = _time_model(build_model(sd, layout="marginal"))
    op_stack = _time_model(build_model(sd, layout="stacked"))
    c_marg = compiled_gradient(sd, "marginal")
    c_stack = compiled_gradient(sd, "stacked")
    print("subject 28, ũ±, log-density + gradient (µs per call):")
    print(f"  baseline: plain PyTensor graph (C backend)       {base:7.1f}")
    print(f"  PyMC model with the fused Op, marginal layout    {op_marg:7.1f}   ({base / op_marg:.1f}x)")
    print(f"  PyMC model with the fused Op, stacked layout     {op_stack:7.1f}   ({base / op_stack:.1f}x)")
    print(f"  compiled density (nutpie), marginal layout       {c_marg:7.1f}   ({base / c_marg:.1f}x)")
    print(f"  compiled density (nutpie), stacked layout        {c_stack:7.1f}   ({base / c_stack:.1f}x)")

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "ibo_pymc.cli.sample",
            "--subject",
            "28",
            "--data",
            args.data,
            "--out",
            f"{tmp}/s28.nc",
            "--quiet",
        ]
        subprocess.run(cmd, check=True, capture_output=True)  # warm the caches
        times = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append(time.perf_counter() - t)
        print(
            f"ibo-sample --subject 28, fresh process, warm caches: {min(times):.1f}-{max(times):.1f} s (target <= 15 s)"
        )
        if args.cohort:
            total = 0.0
            for model in ("u", "tau", "tau_pm"):
                t = time.perf_counter()
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "ibo_pymc.cli.sample",
                        "--subject",
                        "all",
                        "--model",
                        model,
                        "--data",
                        args.data,
                        "--out",
                        tmp,
                        "--quiet",
                    ],
                    check=True,
                    capture_output=True,
                )
                dt = time.perf_counter() - t
                total += dt
                print(f"  28 subjects, {model}: {dt:.0f} s")
            print(f"84 fits: {total:.0f} s (target <= 300 s)")


if __name__ == "__main__":
    main()
