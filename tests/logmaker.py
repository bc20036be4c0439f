"""Write tiny hand-made logs in the study's raw format (for tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CENTRE = 540


def round_events(points, target, start_score=100.0, k=1.0):
    """Rows (without ids) for one round visiting ``points`` (relative to the centre)."""
    tx, ty = target
    d0 = np.hypot(tx, ty)
    rows = []
    for m, (x, y) in enumerate(points, start=1):
        score = start_score + k * (d0 - np.hypot(x - tx, y - ty))
        rows.append([m, 1000 * m, x + CENTRE, y + CENTRE, round(score, 6), tx + CENTRE, ty + CENTRE, 540, 540, 450])
    return rows


def write_subject(folder: Path, user_id: int, rounds, first_session: int, first_event: int):
    """``rounds``: list of (points, target). Returns the next free session and event ids."""
    ev_lines, ses_lines = [], []
    sid, eid = first_session, first_event
    for points, target in rounds:
        rows = round_events(points, target)
        for r in rows:
            ev_lines.append(",".join(str(v) for v in [eid, sid] + r))
            eid += 1
        ses_lines.append(f"{sid},{user_id},0.1,0.2,300.0,1378480631846,5000,{len(rows)}")
        sid += 1
    (folder / f"eventrec{user_id}.csv").write_text("\n".join(ev_lines) + "\n")
    (folder / f"sesrec{user_id}.csv").write_text("\n".join(ses_lines) + "\n")
    return sid, eid


def straight_then_turn(turn, n_moves=4, step=20.0):
    """Start at 0, move 1 along +x, then turn by ``turn`` (screen coords) and go straight."""
    pts = [(0.0, 0.0), (step, 0.0)]
    x, y = step, 0.0
    for _ in range(n_moves - 1):
        x += step * np.cos(turn)
        y += step * np.sin(turn)
        pts.append((round(x, 6), round(y, 6)))
    return pts


def make_cohort(folder: Path, n_subjects=2, n_rounds=24, far=(300.0, 0.0), near=(30.0, 0.0)):
    """A small cohort: per subject ``n_rounds`` rounds, the last one with a reachable hotspot."""
    folder.mkdir(parents=True, exist_ok=True)
    sid, eid = 5000, 1
    for s in range(n_subjects):
        rounds = []
        for r in range(n_rounds):
            target = near if r == n_rounds - 1 else far
            rounds.append((straight_then_turn(0.5 * (-1) ** r), target))
        sid, eid = write_subject(folder, 70 + s, rounds, sid, eid)
    return folder
