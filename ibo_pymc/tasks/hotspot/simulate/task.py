"""A whole-round simulator of the hotspot task that writes logs in the study's raw format.

Each round (docs: tutorials, notebook 01): the start (move 0) is the centre of the task
region; the hotspot lies uniformly in the region; k ~ U[0, 5/3] points/px; the
round has 3 to 10 moves (uniform). The simulated player:

* move 1: a step of 20 px in a uniformly random direction;
* move 2: the Bayesian-optimisation policy with noise: the turn theta2 from
  the move-1 direction is drawn from the wrapped-Cauchy mixture around
  +-theta*(delta_r1) of its acquisition function (:class:`Truth`), where
  delta_r1 is the score change of move 1 (positive theta2 turns clockwise on
  screen, as in the logs, whose y axis points down);
* moves 3 and later: a step of 20 px along the score gradient estimated from
  the last three clicks (a plane through them), turned by N(0, 0.2^2) noise.

:func:`write_cohort` writes ``eventrec<ID>.csv`` and ``sesrec<ID>.csv`` per
player plus ``truth.csv`` (the generating parameters), so every tool of the
package runs on simulated players exactly as on the study's.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.tasks.hotspot.simulate.moves import Truth

CENTRE = 540.0
RADIUS = 450.0
STEP = 20.0
START_SCORE = 100.0


def simulate_rounds(truth: Truth, n_rounds: int, rng, *, tables=None) -> list[dict]:
    """``n_rounds`` rounds of one player: clicks (x, y, score in screen pixels), target, k, theta2, delta_r1."""
    from ibo_pymc.tasks.hotspot.forward.argmax import load_tables
    from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_random

    rng = np.random.default_rng(rng)
    tables = tables or load_tables()
    out = []
    for _ in range(n_rounds):
        r = RADIUS * np.sqrt(rng.uniform())
        a = rng.uniform(-np.pi, np.pi)
        target = np.array([r * np.cos(a), r * np.sin(a)])
        k = rng.uniform(0.0, 5.0 / 3.0)
        n_moves = int(rng.integers(3, 11))
        d0 = np.hypot(*target)

        def score(p, target=target, k=k, d0=d0):
            return START_SCORE + k * (d0 - np.hypot(*(p - target)))

        pts = [np.zeros(2)]
        h1 = rng.uniform(-np.pi, np.pi)
        pts.append(pts[0] + STEP * np.array([np.cos(h1), np.sin(h1)]))
        delta_r1 = score(pts[1]) - score(pts[0])
        ts = tables.theta_star(
            truth.family, truth.param, np.array([delta_r1]), tau=truth.tau_pos, tau_neg=truth.tau_neg
        )
        theta2 = float(wc_mixture_random(ts, truth.gamma, truth.w, rng=rng)[0])
        pts.append(pts[1] + STEP * np.array([np.cos(h1 + theta2), np.sin(h1 + theta2)]))
        while len(pts) < n_moves + 1:
            p = np.array(pts[-3:])
            s = np.array([score(q) for q in p])
            # plane s = c + g . p through the last three clicks
            A = np.c_[np.ones(3), p]
            g = np.linalg.lstsq(A, s, rcond=None)[0][1:]
            h = np.arctan2(g[1], g[0]) if np.hypot(*g) > 1e-12 else rng.uniform(-np.pi, np.pi)
            h += rng.normal(0.0, 0.2)
            pts.append(pts[-1] + STEP * np.array([np.cos(h), np.sin(h)]))
        pts = np.array(pts)
        out.append(
            {
                "points": pts,
                "scores": np.array([score(q) for q in pts]),
                "target": target,
                "k": k,
                "theta2": theta2,
                "delta_r1": float(delta_r1),
                "n_moves": n_moves,
            }
        )
    return out


def write_cohort(folder, truths: dict, n_rounds: int, *, seed: int = 0, tables=None) -> pd.DataFrame:
    """Simulate players (user id -> :class:`Truth`) and write their logs and ``truth.csv`` into ``folder``.

    Returns the simulated rounds (user_id, session_id, delta_r1, theta2, k, target_dist, n_moves).
    """
    from ibo_pymc.io import write_csv, write_text

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    seeds = np.random.SeedSequence(seed).spawn(len(truths))
    rows = []
    sid, eid = 10_000, 1
    t0 = 1_700_000_000_000
    for (uid, truth), ss in zip(sorted(truths.items()), seeds):
        ev_lines, ses_lines = [], []
        for rd in simulate_rounds(truth, n_rounds, ss, tables=tables):
            pts, sc = rd["points"], rd["scores"]
            tx, ty = rd["target"] + CENTRE
            for m, (p, s) in enumerate(zip(pts, sc), start=1):
                x, y = p + CENTRE
                ev_lines.append(
                    f"{eid},{sid},{m},{700 * (m - 1)},{x:.6f},{y:.6f},{s:.6f},{tx:.6f},{ty:.6f},"
                    f"{CENTRE:g},{CENTRE:g},{RADIUS:g}"
                )
                eid += 1
            ses_lines.append(
                f"{sid},{uid},{sc.mean():.6f},{sc[-1]:.6f},{sc.max():.6f},{t0},{700 * (len(pts) - 1)},{len(pts)}"
            )
            rows.append(
                {
                    "user_id": uid,
                    "session_id": sid,
                    "delta_r1": rd["delta_r1"],
                    "theta2": rd["theta2"],
                    "k": rd["k"],
                    "target_dist": float(np.hypot(*rd["target"])),
                    "n_moves": rd["n_moves"],
                }
            )
            sid += 1
            t0 += 10_000
        write_text("\n".join(ev_lines) + "\n", folder / f"eventrec{uid}.csv")
        write_text("\n".join(ses_lines) + "\n", folder / f"sesrec{uid}.csv")
    truth_table = pd.DataFrame([{"user_id": u, **t.to_dict()} for u, t in sorted(truths.items())])
    write_csv(truth_table, folder / "truth.csv", float_format="%.6g")
    return pd.DataFrame(rows)


#: the simulated players of the demo cohort (``--data demo``; user id -> generating parameters)
DEMO_TRUTHS = {
    901: Truth("UCB", 0.8, gamma=0.2, w=0.75, tau_neg=0.9, tau_pos=0.2),
    902: Truth("PI", 12.0, gamma=0.3, w=0.3, tau_neg=0.4, tau_pos=0.1),
    903: Truth("EI", 5.0, gamma=0.25, w=0.5, tau_neg=1.0, tau_pos=0.3),
    904: Truth("UCB", 0.55, gamma=0.35, w=0.6, tau_neg=0.0, tau_pos=0.0),
}
DEMO_ROUNDS = 140
DEMO_SEED = 2026


def write_demo(folder) -> pd.DataFrame:
    """Write the demo cohort (:data:`DEMO_TRUTHS`, :data:`DEMO_ROUNDS` rounds each, seed :data:`DEMO_SEED`)."""
    return write_cohort(folder, DEMO_TRUTHS, DEMO_ROUNDS, seed=DEMO_SEED)


def ensure_demo(folder, *, progress: bool = False) -> Path:
    """``folder`` holding the demo cohort, written first if it is not there.

    The cohort is written whole into a temporary sibling folder and renamed into
    place, so an interrupted run never leaves a partial cohort behind.
    """
    folder = Path(folder)
    if (folder / "truth.csv").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    if progress:
        print(f"writing the simulated demo cohort to {folder} (once)", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        write_demo(tmp)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not (folder / "truth.csv").is_file():  # not another process finishing first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
