"""From raw logs to rounds, moves and per-subject observations (docs: how-to/own-data).

* coordinates relative to the task centre (540, 540); moves re-indexed so the
  start of a round is move 0;
* subjects numbered 1..N in ascending user id; rounds numbered 1, 2, ... per
  subject in session-file order (``round_index``);
* ``target_dist`` (start to hotspot) and ``max_reach = 20 * num_moves``;
* two exclusions: the first ``burn_in`` rounds of each subject, and every
  round whose hotspot was reachable (``target_dist <= max_reach``);
* ``delta_r1`` = score(move 1) - score(move 0) and ``theta2`` = the turn from
  the move-1 direction to the move-2 direction, wrapped to (-pi, pi]
  (positive = clockwise on screen, because screen y points down).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.circular import wrap_angle
from ibo_pymc.tasks.hotspot.data.raw import RawLogs, read_raw_logs

#: Logged screen coordinates of the task centre.
TASK_CENTRE = (540.0, 540.0)
#: Radius of the click region (px): each click lies within this of the last.
CLICK_RADIUS = 20.0
#: Rounds at the start of each subject's session excluded as burn-in.
BURN_IN = 20


@dataclass(frozen=True)
class SubjectObservations:
    """What the model layers consume for one subject: one entry per eligible round."""

    subject: int
    user_id: int
    session_id: np.ndarray
    round_index: np.ndarray
    delta_r1: np.ndarray
    theta2: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.delta_r1)
        for name in ("session_id", "round_index", "theta2"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries, delta_r1 has {n}")

    @property
    def n_rounds(self) -> int:
        return len(self.delta_r1)

    def subset(self, mask: np.ndarray) -> SubjectObservations:
        """The observations where ``mask`` (boolean, one per round) is true."""
        mask = np.asarray(mask, dtype=bool)
        return SubjectObservations(
            subject=self.subject,
            user_id=self.user_id,
            session_id=self.session_id[mask],
            round_index=self.round_index[mask],
            delta_r1=self.delta_r1[mask],
            theta2=self.theta2[mask],
        )

    def to_xarray(self) -> xr.Dataset:
        """The observations as a Dataset with dim ``round`` (coordinate: session id)."""
        return xr.Dataset(
            {
                "delta_r1": ("round", self.delta_r1, {"units": "points", "long_name": "move-1 score change"}),
                "theta2": ("round", self.theta2, {"units": "rad", "long_name": "move-2 turning angle"}),
                "round_index": ("round", self.round_index),
            },
            coords={"round": self.session_id},
            attrs={"subject": self.subject, "user_id": self.user_id},
        )

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "subject": self.subject,
                "user_id": self.user_id,
                "session_id": self.session_id,
                "round_index": self.round_index,
                "delta_r1": self.delta_r1,
                "theta2": self.theta2,
            }
        )


@dataclass(frozen=True)
class HotspotData:
    """The hotspot study as tidy tables.

    ``moves``: one row per click (subject, session_id, move, x, y, score,
    delta_score, heading, turn). ``rounds``: one row per round with the derived
    quantities and the two exclusion flags. Build it with :func:`load_hotspot`.
    """

    moves: pd.DataFrame
    rounds: pd.DataFrame
    folder: Path | None = None
    burn_in: int = BURN_IN
    _obs_cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def subjects(self) -> list[int]:
        return sorted(self.rounds["subject"].unique().tolist())

    @property
    def eligible(self) -> pd.DataFrame:
        """The rounds that survive both exclusions."""
        return self.rounds[self.rounds["eligible"]]

    def observations(self, subject: int) -> SubjectObservations:
        """The eligible rounds of one subject (1-based subject number)."""
        if subject not in self._obs_cache:
            if subject not in set(self.subjects):
                raise InputError(
                    f"subject {subject} is out of range; expected 1..{len(self.subjects)}", field="subject"
                )
            r = self.eligible[self.eligible["subject"] == subject]
            if r.empty:
                src = f" ({self.folder})" if self.folder else ""
                raise InputError(
                    f"subject {subject} (user {self._user(subject)}) has no eligible rounds after the exclusions{src}",
                    field="subject",
                )
            self._obs_cache[subject] = SubjectObservations(
                subject=subject,
                user_id=int(r["user_id"].iloc[0]),
                session_id=r["session_id"].to_numpy(),
                round_index=r["round_index"].to_numpy(),
                delta_r1=r["delta_r1"].to_numpy(dtype=float),
                theta2=r["theta2"].to_numpy(dtype=float),
            )
        return self._obs_cache[subject]

    def _user(self, subject: int) -> int:
        return int(self.rounds.loc[self.rounds["subject"] == subject, "user_id"].iloc[0])

    def all_observations(self) -> dict[int, SubjectObservations]:
        return {s: self.observations(s) for s in self.subjects}

    def observations_frame(self) -> pd.DataFrame:
        """One row per eligible round: ``subject,user_id,session_id,round_index,delta_r1,theta2``."""
        cols = ["subject", "user_id", "session_id", "round_index", "delta_r1", "theta2"]
        return self.eligible[cols].reset_index(drop=True)

    def to_xarray(self) -> xr.Dataset:
        """Eligible rounds of the whole cohort, dim ``round`` with a ``subject`` coordinate."""
        e = self.eligible
        return xr.Dataset(
            {
                "delta_r1": ("round", e["delta_r1"].to_numpy(), {"units": "points"}),
                "theta2": ("round", e["theta2"].to_numpy(), {"units": "rad"}),
            },
            coords={
                "round": e["session_id"].to_numpy(),
                "subject": ("round", e["subject"].to_numpy()),
                "round_index": ("round", e["round_index"].to_numpy()),
            },
        )

    def exclusion_counts(self) -> pd.DataFrame:
        """Per subject: rounds logged, removed as burn-in, removed as reachable, kept."""
        r = self.rounds
        burn = r["round_index"] <= self.burn_in
        g = pd.DataFrame(
            {
                "subject": r["subject"],
                "user_id": r["user_id"],
                "logged": 1,
                "burn_in": burn.astype(int),
                # reachable rounds counted among those that survive the burn-in rule
                "reachable": (~burn & r["reachable"]).astype(int),
                "eligible": r["eligible"].astype(int),
            }
        )
        return g.groupby(["subject", "user_id"], as_index=False).sum()

    def summary(self) -> pd.DataFrame:
        """Per subject: eligible rounds and task performance (paper Table 2, columns 6-8).

        ``mean_dr2`` / ``mean_dr3``: mean score change of move 2 / move 3 over the
        eligible rounds that have that move; ``mean_total``: mean over eligible
        rounds of the summed score changes of moves 2..end.
        """
        e = self.eligible
        out = e.groupby(["subject", "user_id"], as_index=False).agg(
            n_rounds=("session_id", "size"),
            mean_dr2=("delta_r2", "mean"),
            mean_dr3=("delta_r3", "mean"),
            mean_total=("delta_total", "mean"),
        )
        return out


def derive(raw: RawLogs, burn_in: int = BURN_IN) -> HotspotData:
    """Derive moves and rounds tables from validated raw logs."""
    ev = raw.events
    ses = raw.sessions
    # subjects are numbered over every participant found (a file pair each; empty files are refused), so a
    # subject keeps its number when only some participants' logs are read
    subject_of = {u: k + 1 for k, u in enumerate(sorted(raw.source))}

    # --- moves -------------------------------------------------------------
    sid = ev["session_id"].to_numpy()
    new_round = np.r_[True, sid[1:] != sid[:-1]]
    starts = np.flatnonzero(new_round)
    lengths = np.diff(np.r_[starts, len(ev)])
    move = ev["move"].to_numpy() - 1
    x = ev["x_loc"].to_numpy(dtype=float) - TASK_CENTRE[0]
    y = ev["y_loc"].to_numpy(dtype=float) - TASK_CENTRE[1]
    score = ev["score"].to_numpy(dtype=float)
    dx = np.r_[np.nan, np.diff(x)]
    dy = np.r_[np.nan, np.diff(y)]
    dscore = np.r_[np.nan, np.diff(score)]
    dx[starts] = dy[starts] = dscore[starts] = np.nan
    heading = np.arctan2(dy, dx)  # direction of the step into this click (screen coordinates)
    turn = wrap_angle(heading - np.r_[np.nan, heading[:-1]])
    turn[move < 2] = np.nan
    moves = pd.DataFrame(
        {
            "subject": ev["user_id"].map(subject_of).to_numpy(),
            "user_id": ev["user_id"].to_numpy(),
            "session_id": sid,
            "event_id": ev["event_id"].to_numpy(),
            "move": move,
            "x": x,
            "y": y,
            "score": score,
            "delta_score": dscore,
            "heading": heading,
            "turn": turn,
        }
    )

    # --- rounds ------------------------------------------------------------
    target_x = ev["target_x"].to_numpy(dtype=float)[starts] - TASK_CENTRE[0]
    target_y = ev["target_y"].to_numpy(dtype=float)[starts] - TASK_CENTRE[1]
    n_moves = lengths - 1
    target_dist = np.hypot(target_x, target_y)
    max_reach = CLICK_RADIUS * n_moves
    # per-round sums of score changes from move 2 on
    round_id = np.repeat(np.arange(len(starts)), lengths)
    later = np.where(move >= 2, dscore, 0.0)
    total = np.bincount(round_id, weights=later, minlength=len(starts))
    has3 = lengths >= 4
    dr3 = np.full(len(starts), np.nan)
    dr3[has3] = dscore[starts[has3] + 3]
    rounds = pd.DataFrame(
        {
            "subject": moves["subject"].to_numpy()[starts],
            "user_id": moves["user_id"].to_numpy()[starts],
            "session_id": sid[starts],
            "num_moves": n_moves,
            "target_x": target_x,
            "target_y": target_y,
            "target_dist": target_dist,
            "max_reach": max_reach,
            "delta_r1": dscore[starts + 1],
            "theta2": turn[starts + 2],
            "delta_r2": dscore[starts + 2],
            "delta_r3": dr3,
            "delta_total": total,
        }
    )
    # round_index: the order of the session file, per subject
    ses_order = pd.Series(np.arange(len(ses)), index=ses["session_id"].to_numpy())
    rounds["_order"] = ses_order.loc[rounds["session_id"]].to_numpy()
    rounds = rounds.sort_values(["subject", "_order"], kind="stable").drop(columns="_order").reset_index(drop=True)
    rounds.insert(3, "round_index", rounds.groupby("subject").cumcount().to_numpy() + 1)
    rounds["burn_in"] = rounds["round_index"] <= burn_in
    rounds["reachable"] = rounds["target_dist"] <= rounds["max_reach"]
    rounds["eligible"] = ~rounds["burn_in"] & ~rounds["reachable"]
    return HotspotData(moves=moves, rounds=rounds, folder=raw.folder, burn_in=burn_in)


def load_hotspot(folder: str | Path | None = None, *, burn_in: int = BURN_IN, subjects=None) -> HotspotData:
    """Load the hotspot study from a folder of raw logs.

    ``folder=None`` resolves the data the usual way (``IBO_DATA_DIR``, else the
    per-user cache, fetching on first use); see :func:`ibo_pymc.tasks.hotspot.data.fetch.resolve_data_dir`.
    ``subjects``: read only these subjects' logs (a fit of one subject reads 1 of 28 file pairs: 30 ms instead
    of 0.8 s); subject numbers stay those of the whole folder. Where one of them is not in the folder, every
    participant is read, so that the data set lists what there is.
    """
    if folder is None:
        from ibo_pymc.tasks.hotspot.data.fetch import resolve_data_dir

        folder = resolve_data_dir(None)
    users = None
    if subjects is not None:
        from ibo_pymc.tasks.hotspot.data.raw import discover

        found = sorted(discover(folder))
        if all(isinstance(s, int) and 1 <= s <= len(found) for s in subjects):
            users = [found[s - 1] for s in subjects]
    return derive(read_raw_logs(folder, users), burn_in=burn_in)
