"""Reading the study's raw logs (``eventrec<ID>.csv`` and ``sesrec<ID>.csv``).

The files have no header. Each participant has one event file (one row per
click, the start of a round included) and one session file (one row per
round). This module parses and validates them; it derives nothing (see
:mod:`ibo_pymc.tasks.hotspot.data.rounds`).

Deliberate choices about formatting: a UTF-8 byte-order mark and CRLF line
ends are accepted (spreadsheet programs add them); trailing blank lines are
ignored; a blank line between records, a header row, a wrong number of
fields, and a field that is not a finite number are errors naming the file,
the line and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.errors import InputError

EVENT_COLUMNS = (
    "event_id",
    "session_id",
    "move",
    "time",
    "x_loc",
    "y_loc",
    "score",
    "target_x",
    "target_y",
    "ring_center_x",
    "ring_center_y",
    "ring_radius",
)
SESSION_COLUMNS = (
    "session_id",
    "user_id",
    "avg_score",
    "final_score",
    "max_score",
    "time_start",
    "total_time",
    "num_moves",
)
# Columns that must hold whole numbers.
_EVENT_INTEGER = {"event_id", "session_id", "move", "time"}
_SESSION_INTEGER = {"session_id", "user_id", "time_start", "total_time", "num_moves"}

_EVENT_RE = re.compile(r"^eventrec(\d+)\.csv$")
_SESSION_RE = re.compile(r"^sesrec(\d+)\.csv$")

#: Fewest clicks a usable round has: the start (move 0), move 1 and move 2.
MIN_EVENTS_PER_ROUND = 3
#: Slack (px) allowed beyond the ring radius for a logged click.
REGION_TOLERANCE = 1.0


@dataclass(frozen=True)
class RawLogs:
    """The validated raw logs of a folder, one row per event / per session.

    ``events`` and ``sessions`` keep the study's column names; ``events`` is
    sorted by (user, session order in the session file, move) and carries a
    ``user_id`` column. ``source`` maps each user id to its two files.
    """

    folder: Path
    events: pd.DataFrame
    sessions: pd.DataFrame
    source: dict[int, tuple[Path, Path]]


def _read_table(path: Path, columns: tuple[str, ...], integer: set[str]) -> pd.DataFrame:
    """Parse one header-less CSV strictly into a DataFrame of numbers."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=path) from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise InputError(f"empty file; expected rows of {len(columns)} comma-separated numbers", path=path)
    ncol = len(columns)
    rows = []
    for i, line in enumerate(lines, start=1):
        parts = line.split(",")
        if len(parts) != ncol:
            if not line.strip():
                raise InputError("blank line between records", path=path, line=i)
            raise InputError(
                f"expected {ncol} comma-separated fields ({', '.join(columns)}), found {len(parts)}",
                path=path,
                line=i,
            )
        rows.append(parts)
    cells = np.array(rows, dtype=object)
    values = np.empty(cells.shape, dtype=np.float64)
    for j, name in enumerate(columns):
        col = cells[:, j]
        try:
            values[:, j] = col.astype(np.float64)
            bad = ~np.isfinite(values[:, j])
        except ValueError:
            bad = np.array([not _is_number(c) for c in col])
        if name in integer and not bad.any():
            bad = values[:, j] != np.round(values[:, j])
            kind = "a whole number"
        else:
            kind = "a finite number"
        if bad.any():
            i = int(np.argmax(bad))
            hint = " (a header row? the files have none)" if i == 0 and not _is_number(col[0]) else ""
            raise InputError(f"expected {kind}, found {col[i].strip()!r}{hint}", path=path, line=i + 1, field=name)
    df = pd.DataFrame(values, columns=list(columns))
    for name in integer:
        df[name] = df[name].astype(np.int64)
    df["line"] = np.arange(1, len(df) + 1)
    return df


def _is_number(text: str) -> bool:
    try:
        return bool(np.isfinite(float(text)))
    except ValueError:
        return False


def discover(folder: str | Path) -> dict[int, tuple[Path, Path]]:
    """Pair the ``eventrec<ID>.csv`` and ``sesrec<ID>.csv`` files of a folder by ID."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("not a folder; expected the folder of eventrec*.csv / sesrec*.csv logs", path=folder)
    events: dict[int, Path] = {}
    sessions: dict[int, Path] = {}
    for p in folder.iterdir():
        if m := _EVENT_RE.match(p.name):
            events[int(m.group(1))] = p
        elif m := _SESSION_RE.match(p.name):
            sessions[int(m.group(1))] = p
    if not events and not sessions:
        raise InputError("no eventrec<ID>.csv / sesrec<ID>.csv files found", path=folder)
    for uid in sorted(set(events) ^ set(sessions)):
        missing = f"sesrec{uid}.csv" if uid in events else f"eventrec{uid}.csv"
        have = events.get(uid) or sessions.get(uid)
        raise InputError(f"missing its partner file {missing}", path=have)
    return {uid: (events[uid], sessions[uid]) for uid in sorted(events)}


def read_participant(event_path: Path, session_path: Path, user_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read and cross-check one participant's two files: the events come back grouped by round in the session
    file's order (file order inside a round), each check naming the file, line and field it fails at."""
    ses = _read_table(session_path, SESSION_COLUMNS, _SESSION_INTEGER)
    ev = _read_table(event_path, EVENT_COLUMNS, _EVENT_INTEGER)
    _check_ids(ses, ev, session_path, event_path, user_id)
    _check_round_sizes(ses, ev, session_path, event_path)
    order = {sid: k for k, sid in enumerate(ses["session_id"])}
    ev = ev.assign(_order=ev["session_id"].map(order))
    ev = ev.sort_values(["_order", "line"], kind="stable").reset_index(drop=True)
    _check_moves(ev, event_path)
    _check_region(ev, event_path)
    ev = ev.drop(columns="_order").assign(user_id=user_id)
    return ev, ses


def _raise_at_first(bad, table: pd.DataFrame, message, path: Path, field: str) -> None:
    """Raise an :class:`InputError` at the first row where ``bad`` holds; ``message(i)`` says what is wrong."""
    bad = np.asarray(bad)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(message(i), path=path, line=int(table["line"].iloc[i]), field=field)


def _check_ids(ses, ev, session_path: Path, event_path: Path, user_id: int) -> None:
    """The user id matches the file name; session and event ids are unique; every event's session exists."""
    _raise_at_first(
        ses["user_id"].to_numpy() != user_id,
        ses,
        lambda i: f"expected user id {user_id} (from the file name), found {ses['user_id'].iloc[i]}",
        session_path,
        "user_id",
    )
    _raise_at_first(
        ses["session_id"].duplicated().to_numpy(),
        ses,
        lambda i: f"duplicated session id {ses['session_id'].iloc[i]}; expected one row per round",
        session_path,
        "session_id",
    )
    _raise_at_first(
        ev["event_id"].duplicated().to_numpy(),
        ev,
        lambda i: f"duplicated event id {ev['event_id'].iloc[i]}",
        event_path,
        "event_id",
    )
    _raise_at_first(
        ~ev["session_id"].isin(ses["session_id"]).to_numpy(),
        ev,
        lambda i: f"session id {ev['session_id'].iloc[i]} is not in {session_path.name}",
        event_path,
        "session_id",
    )


def _check_round_sizes(ses, ev, session_path: Path, event_path: Path) -> None:
    """Each round has events, as many as its ``num_moves``, and at least the three a round needs."""
    counts = ev.groupby("session_id", sort=False).size()
    for row in ses.itertuples(index=False):
        n = int(counts.get(row.session_id, 0))
        if n == 0:
            problem, field = f"session {row.session_id} has no events in {event_path.name}", "session_id"
        elif n != row.num_moves:
            problem = f"num_moves is {row.num_moves} but {event_path.name} has {n} events for session {row.session_id}"
            field = "num_moves"
        elif n < MIN_EVENTS_PER_ROUND:
            problem = (
                f"session {row.session_id} has {n} clicks; a round needs at least {MIN_EVENTS_PER_ROUND} "
                "(the start, move 1 and move 2)"
            )
            field = "num_moves"
        else:
            continue
        raise InputError(problem, path=session_path, line=int(row.line), field=field)


def _check_moves(ev, event_path: Path) -> None:
    """Moves run 1, 2, ..., n in file order within each round (``ev`` grouped by round, column ``_order``)."""
    first = np.r_[True, ev["_order"].to_numpy()[1:] != ev["_order"].to_numpy()[:-1]]
    start_idx = np.flatnonzero(first)
    expected = np.arange(len(ev)) - np.repeat(start_idx, np.diff(np.r_[start_idx, len(ev)])) + 1
    _raise_at_first(
        ev["move"].to_numpy() != expected,
        ev,
        lambda i: (
            f"expected move {expected[i]} of session {ev['session_id'].iloc[i]} here, found move "
            f"{ev['move'].iloc[i]} (moves must be 1, 2, ... in order without gaps)"
        ),
        event_path,
        "move",
    )


def _check_region(ev, event_path: Path) -> None:
    """The ring has a positive radius and every click lies inside it (to :data:`REGION_TOLERANCE`)."""
    radius = ev["ring_radius"].to_numpy()
    _raise_at_first(radius <= 0, ev, lambda i: "expected a positive ring radius", event_path, "ring_radius")
    dist = np.hypot(ev["x_loc"] - ev["ring_center_x"], ev["y_loc"] - ev["ring_center_y"]).to_numpy()
    _raise_at_first(
        dist > radius + REGION_TOLERANCE,
        ev,
        lambda i: (
            f"click at ({ev['x_loc'].iloc[i]:g}, {ev['y_loc'].iloc[i]:g}) lies {dist[i]:.1f} px from the ring "
            f"centre, outside the task region of radius {radius[i]:g}"
        ),
        event_path,
        "x_loc",
    )


def read_raw_logs(folder: str | Path, users=None) -> RawLogs:
    """Read and validate every participant's logs in ``folder`` (``users``: only these user ids' files; the
    checks across participants then cover those read).

    Raises :class:`~ibo_pymc.errors.InputError` naming the file, line and field
    of the first problem found. ``source`` lists every participant found, read or not.
    """
    folder = Path(folder)
    source = discover(folder)
    wanted = source if users is None else {u: source[u] for u in sorted(set(users))}
    events, sessions = [], []
    for uid, (ev_path, ses_path) in wanted.items():
        ev, ses = read_participant(ev_path, ses_path, uid)
        events.append(ev)
        sessions.append(ses)
    ev = pd.concat(events, ignore_index=True)
    ses = pd.concat(sessions, ignore_index=True)
    dup = ses["session_id"].duplicated(keep="first")
    if dup.any():
        sid = ses["session_id"][dup].iloc[0]
        uid = ses["user_id"][dup].iloc[0]
        raise InputError(
            f"session id {sid} also appears for another participant", path=source[uid][1], field="session_id"
        )
    dup = ev["event_id"].duplicated(keep="first")
    if dup.any():
        eid = ev["event_id"][dup].iloc[0]
        uid = ev["user_id"][dup].iloc[0]
        raise InputError(f"event id {eid} also appears for another participant", path=source[uid][0], field="event_id")
    return RawLogs(folder=folder, events=ev, sessions=ses, source=source)
