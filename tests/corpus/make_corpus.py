"""The malformed-input corpus: ``python tests/corpus/make_corpus.py [DEST]``.

Each case is a folder ``<corpus>/<name>/`` with tiny hand-made inputs
(study-format logs written by ``tests/logmaker.py``, split files, NetCDF files)
and an entry in ``cases.json``: the command to run (``{case}`` is the case
folder, ``{out}`` an output path that must not appear), the exit code expected,
and text the one-line message must contain (the file, and the line or field).
Nothing here comes from the study's raw logs.

Only ``cases.json`` (the manifest) is kept in the repository: the case folders
are log files in the study's format, so the tests build them afresh in a
temporary folder (:func:`build`, the ``corpus`` fixture in ``tests/conftest.py``).
The script rewrites the manifest and, given ``DEST``, writes the cases there.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.logmaker import straight_then_turn, write_subject

FAR, NEAR = (300.0, 0.0), (30.0, 0.0)


def cohort(folder: Path, n_rounds=(24, 24)) -> Path:
    """Two subjects (user ids 70, 71); in each, the last round's hotspot is reachable."""
    folder.mkdir(parents=True, exist_ok=True)
    sid, eid = 5000, 1
    for s, n in enumerate(n_rounds):
        rounds = [(straight_then_turn(0.5 * (-1) ** r, n_moves=2), NEAR if r == n - 1 else FAR) for r in range(n)]
        sid, eid = write_subject(folder, 70 + s, rounds, sid, eid)
    return folder


def lines(p: Path) -> list[str]:
    return p.read_text().splitlines()


def put(p: Path, rows: list[str]) -> None:
    p.write_text("\n".join(rows) + "\n")


def set_field(p: Path, line_no: int, col: int, value: str) -> None:
    rows = lines(p)
    parts = rows[line_no - 1].split(",")
    parts[col] = value
    rows[line_no - 1] = ",".join(parts)
    put(p, rows)


DATA = ["ibo-data", "observations", "--data", "{case}/raw", "--csv", "{out}"]
SAMPLE = ["ibo-sample", "--data", "{valid}", "--out", "{out}"]


def raw_case(mutate, expect, names, command=DATA, rc=2, n_rounds=(3, 3)):
    """A case with its own (mutated) logs in ``<case>/raw``; without ``mutate``, the
    command runs on the shared valid cohort ``{valid}`` and the case folder stays empty."""

    def make(case: Path):
        if mutate or n_rounds != (3, 3):
            raw = cohort(case / "raw", n_rounds)
            if mutate:
                mutate(raw)
        else:
            (case / "README").write_text("runs on the shared valid cohort _valid/raw\n")

    return make, {"command": command, "rc": rc, "expect": expect, "names": names}


def ev(raw, user=70):
    return raw / f"eventrec{user}.csv"


def ses(raw, user=70):
    return raw / f"sesrec{user}.csv"


def _swap_moves(raw):
    rows = lines(ev(raw))
    rows[3], rows[4] = rows[4], rows[3]
    put(ev(raw), rows)


def _skip_move(raw):
    set_field(ev(raw), 5, 2, "3")  # session 5001's moves become 1, 3, 3


def _two_moves(raw):
    rows = lines(ev(raw))
    put(ev(raw), [r for i, r in enumerate(rows) if i != 2])  # drop session 5000's move 3
    set_field(ses(raw), 1, 7, "2")


def _split(case: Path, rows: list[str]):
    header = [] if rows and rows[0].startswith("subject") else ["subject,session_id,set"]
    put(case / "split.csv", [*header, *rows])


def _good_split_rows(n_rounds=24):
    # eligible rounds: 21..23 of each subject (burn-in 20; the 24th is reachable)
    out = []
    for s, base in ((1, 5000), (2, 5024)):
        for r in range(20, n_rounds - 1):
            out.append(f"{s},{base + r},{'test' if r == 22 else 'train'}")
    return out


def split_case(rows_fn, expect, names):
    def make(case: Path):
        _split(case, rows_fn(_good_split_rows()))

    cmd = [
        "ibo-compare",
        "--subject",
        "1",
        "--data",
        "{valid}",
        "--split",
        "{case}/split.csv",
        "--fits",
        "{case}/fits",
        "--csv",
        "{out}",
    ]
    return make, {"command": cmd, "rc": 2, "expect": expect, "names": names}


def netcdf_case(write, expect, names):
    def make(case: Path):
        (case / "fits").mkdir()
        write(case / "fits" / "subject-01-tau_pm.nc")

    cmd = ["ibo-plot", "--subject", "1", "--data", "{valid}", "--fits", "{case}/fits", "--out", "{out}"]
    return make, {"command": cmd, "rc": 2, "expect": expect, "names": names}


def _random_bytes(p: Path):
    p.write_bytes(bytes((i * 37 + 11) % 256 for i in range(2048)))


def _truncated(p: Path):
    import numpy as np
    import xarray as xr

    xr.Dataset({"x": ("a", np.arange(4000.0))}).to_netcdf(p, engine="h5netcdf")
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _not_a_fit(p: Path):
    import numpy as np
    import xarray as xr

    xr.Dataset({"x": ("a", np.arange(4.0))}).to_netcdf(p, engine="h5netcdf", group="posterior")


def lme_case(rows, expect, names, extra=(), rc=2):
    def make(case: Path):
        if rows is not None:
            (case / "lme.csv").write_bytes(rows.encode("utf-8") if isinstance(rows, str) else rows)

    cmd = ["ibo-cohort", "bms", "--lme", "{case}/lme.csv", "--csv", "{out}", *extra]
    return make, {"command": cmd, "rc": rc, "expect": expect, "names": names}


def table_case(name, text, command, expect, names, rc=2):
    """A tidy table (bring your own data) written as ``<case>/<name>``."""

    def make(case: Path):
        (case / name).write_text(text)

    return make, {"command": command, "rc": rc, "expect": expect, "names": names}


ROUNDS = ["ibo-data", "observations", "--data", "{case}/rounds.csv", "--csv", "{out}"]
GOOD_ROUNDS = "subject,delta_r1,theta2,session\n1,2.5,0.3,11\n1,-1.0,-2.0,12\n2,0.5,3.0,13\n"
CHOICES = ["ibo-reproduce", "--task", "gridsearch", "--data", "{case}/choices.csv", "--out", "{out}"]
GOOD_CHOICES = "subject,context,round,trial,x,y,z\n" + "".join(
    f"7,spatial,1,{t},{t % 8},{(3 * t) % 8},{40 + t}\n" for t in range(1, 5)
)


def _choices_line(k, field, value):
    rows = GOOD_CHOICES.splitlines()
    head = rows[0].split(",")
    cells = rows[k].split(",")
    cells[head.index(field)] = value
    rows[k] = ",".join(cells)
    return "\n".join(rows) + "\n"


GOOD_LME = "subject,u,tau,tau_pm\n1,-10.5,-9.0,-8.2\n2,-11.0,-12.5,-10.1\n3,-7.25,-7.5,-7.0\n"

CASES = {
    # --- raw logs -----------------------------------------------------------------------
    "missing-session-file": raw_case(lambda r: ses(r).unlink(), "missing its partner file", "eventrec70.csv"),
    "missing-event-file": raw_case(lambda r: ev(r, 71).unlink(), "missing its partner file", "sesrec71.csv"),
    "header-row-events": raw_case(
        lambda r: put(ev(r), ["event_id,session_id,move,time,x,y,score,tx,ty,cx,cy,r", *lines(ev(r))]),
        "header",
        "eventrec70.csv:1",
    ),
    "header-row-sessions": raw_case(
        lambda r: put(ses(r, 71), ["session_id,user_id,a,b,c,d,e,f", *lines(ses(r, 71))]), "header", "sesrec71.csv:1"
    ),
    "too-many-columns": raw_case(
        lambda r: set_field(ev(r), 5, 3, "1,2"), "expected 12 comma-separated fields", "eventrec70.csv:5"
    ),
    "too-few-columns": raw_case(
        lambda r: put(ses(r), [lines(ses(r))[0].rsplit(",", 1)[0], *lines(ses(r))[1:]]),
        "expected 8 comma-separated",
        "sesrec70.csv:1",
    ),
    "non-numeric-field": raw_case(
        lambda r: set_field(ev(r), 7, 6, "abc"), "expected a finite number", "eventrec70.csv:7: field 'score'"
    ),
    "nan-field": raw_case(
        lambda r: set_field(ev(r), 8, 4, "NaN"), "expected a finite number", "eventrec70.csv:8: field 'x_loc'"
    ),
    "fractional-move": raw_case(
        lambda r: set_field(ev(r), 2, 2, "1.5"), "whole number", "eventrec70.csv:2: field 'move'"
    ),
    "empty-file": raw_case(lambda r: ev(r).write_text(""), "empty file", "eventrec70.csv"),
    "blank-line": raw_case(
        lambda r: put(ses(r), [*lines(ses(r))[:2], "", *lines(ses(r))[2:]]), "blank line", "sesrec70.csv:3"
    ),
    "not-utf8": raw_case(
        lambda r: ses(r).write_bytes(ses(r).read_text().encode("utf-16")), "not a UTF-8 text file", "sesrec70.csv"
    ),
    "duplicated-event-id": raw_case(
        lambda r: set_field(ev(r), 2, 0, "1"), "duplicated event id", "eventrec70.csv:2: field 'event_id'"
    ),
    "duplicated-event-id-across-subjects": raw_case(
        lambda r: set_field(ev(r, 71), 1, 0, "1"), "event id 1 also appears", "field 'event_id'"
    ),
    "duplicated-session-id": raw_case(
        lambda r: put(ses(r), [*lines(ses(r)), lines(ses(r))[0]]),
        "duplicated session id",
        "sesrec70.csv:4: field 'session_id'",
    ),
    "session-missing-from-session-file": raw_case(
        lambda r: set_field(ev(r), 3, 1, "99999"), "not in sesrec70.csv", "eventrec70.csv:3: field 'session_id'"
    ),
    "session-without-events": raw_case(
        lambda r: put(ses(r), [*lines(ses(r)), "9999,70,0.1,0.2,300.0,1378480631846,5000,3"]),
        "has no events",
        "sesrec70.csv:4",
    ),
    "wrong-user-id": raw_case(
        lambda r: set_field(ses(r), 2, 1, "71"), "expected user id 70", "sesrec70.csv:2: field 'user_id'"
    ),
    "moves-out-of-order": raw_case(_swap_moves, "moves must be 1, 2, ...", "eventrec70.csv:4: field 'move'"),
    "move-skipped": raw_case(_skip_move, "moves must be 1, 2, ...", "field 'move'"),
    "num-moves-mismatch": raw_case(
        lambda r: set_field(ses(r), 3, 7, "4"), "num_moves is 4", "sesrec70.csv:3: field 'num_moves'"
    ),
    "round-with-two-moves": raw_case(_two_moves, "needs at least 3", "sesrec70.csv:1: field 'num_moves'"),
    "click-outside-region": raw_case(
        lambda r: set_field(ev(r), 6, 4, "2000"), "outside the task region", "eventrec70.csv:6: field 'x_loc'"
    ),
    "non-positive-ring-radius": raw_case(
        lambda r: set_field(ev(r), 4, 11, "0"), "positive ring radius", "eventrec70.csv:4: field 'ring_radius'"
    ),
    # (git keeps no empty folders: a note stands in for the missing logs)
    "empty-folder": raw_case(
        lambda r: ([p.unlink() for p in r.iterdir()], (r / "NOTE.txt").write_text("no logs here on purpose\n")),
        "no eventrec",
        "raw",
    ),
    "data-is-a-file": raw_case(
        None,
        "not a folder",
        "eventrec70.csv",
        command=["ibo-data", "observations", "--data", "{valid}/eventrec70.csv", "--csv", "{out}"],
    ),
    "subject-without-eligible-rounds": raw_case(
        None,
        "no eligible rounds",
        "subject",
        command=["ibo-sample", "--subject", "2", "--data", "{case}/raw", "--out", "{out}"],
        n_rounds=(21, 20),
    ),
    # deliberately accepted: Windows line ends and a byte-order mark
    "crlf-and-bom-accepted": raw_case(
        lambda r: ev(r).write_bytes(b"\xef\xbb\xbf" + ev(r).read_bytes().replace(b"\n", b"\r\n")), "", "", rc=0
    ),
    # --- split files -----------------------------------------------------------------------
    "split-unknown-session": split_case(
        lambda rows: [*rows[:-1], "2,77777,train"], "not an eligible round", "split.csv:7: field 'session_id'"
    ),
    "split-bad-set": split_case(
        lambda rows: [rows[0].replace("train", "validation"), *rows[1:]],
        "expected 'train' or 'test'",
        "split.csv:2: field 'set'",
    ),
    "split-no-training-rounds": split_case(
        lambda rows: [r.replace("train", "test") if r.startswith("1,") else r for r in rows],
        "no training rounds",
        "split.csv",
    ),
    "split-missing-column": split_case(
        lambda rows: ["subject,session_id", *(",".join(r.split(",")[:2]) for r in rows)], "missing column", "split.csv"
    ),
    "split-duplicated-session": split_case(lambda rows: [*rows, rows[0]], "listed twice", "split.csv"),
    # --- saved fits ---------------------------------------------------------------------
    "netcdf-corrupt": netcdf_case(_random_bytes, "cannot read NetCDF", "subject-01-tau_pm.nc"),
    "netcdf-truncated": netcdf_case(_truncated, "cannot read NetCDF", "subject-01-tau_pm.nc"),
    "netcdf-not-a-fit": netcdf_case(_not_a_fit, "not an ibo-pymc fit", "subject-01-tau_pm.nc"),
    # --- tables of log model evidence (ibo-cohort bms) ----------------------------------
    "lme-non-numeric": lme_case(GOOD_LME.replace("-12.5", "abc"), "expected a log evidence", "lme.csv:3: field 'tau'"),
    "lme-infinite": lme_case(
        GOOD_LME.replace("-10.5", "-inf"), "expected a finite log evidence", "lme.csv:2: field 'u'"
    ),
    "lme-one-model": lme_case("subject,u\n1,-3\n2,-4\n", "at least two model columns", "lme.csv:1"),
    "lme-duplicate-column": lme_case("u,tau,u\n1,2,3\n", "appears twice", "lme.csv:1"),
    "lme-short-row": lme_case(GOOD_LME.replace("-7.5,", ""), "expected 4 fields, got 3", "lme.csv:4"),
    "lme-empty": lme_case("", "empty file", "lme.csv"),
    "lme-header-only": lme_case("u,tau\n", "no rows", "lme.csv"),
    "lme-duplicate-subject": lme_case(GOOD_LME.replace("\n2,", "\n1,"), "appears twice", "lme.csv: field 'subject'"),
    "lme-missing-file": lme_case(None, "no such file", "lme.csv"),
    "lme-family-unknown-model": lme_case(
        GOOD_LME, "is not one of the models", "field '--families'", extra=["--families", "A=u,tau;B=tau_pm,v"]
    ),
    "lme-family-incomplete": lme_case(
        GOOD_LME, "in no family", "field '--families'", extra=["--families", "A=u;B=tau"]
    ),
    "lme-family-bad-spec": lme_case(
        GOOD_LME, "expected FAMILY=MODEL", "field '--families'", extra=["--families", "A:u,tau"]
    ),
    "lme-bad-suffix": lme_case(GOOD_LME, "--csv", ".csv", extra=["--csv", "{case}/out.txt"]),
    # deliberately accepted: a byte-order mark, Windows line ends, no subject column
    "lme-bom-crlf-accepted": lme_case(b"\xef\xbb\xbfu,tau\r\n-1,-2\r\n-3,-1\r\n", "", "", rc=0),
    # --- tidy tables (bring your own data) -----------------------------------------------
    "rounds-missing-column": table_case(
        "rounds.csv", GOOD_ROUNDS.replace("theta2", "theta"), ROUNDS, "missing column", "rounds.csv: field 'theta2'"
    ),
    "rounds-non-numeric": table_case(
        "rounds.csv", GOOD_ROUNDS.replace("-1.0", "left"), ROUNDS, "expected a number", "rounds.csv:3: field 'delta_r1'"
    ),
    "rounds-angle-degrees": table_case(
        "rounds.csv", GOOD_ROUNDS.replace("3.0", "170"), ROUNDS, "(-pi, pi]", "rounds.csv:4: field 'theta2'"
    ),
    "rounds-duplicate-session": table_case(
        "rounds.csv", GOOD_ROUNDS.replace(",12\n", ",11\n"), ROUNDS, "appears twice", "rounds.csv:3: field 'session'"
    ),
    "rounds-subject-zero": table_case(
        "rounds.csv",
        GOOD_ROUNDS.replace("\n2,", "\n0,"),
        ROUNDS,
        "subject number >= 1",
        "rounds.csv:4: field 'subject'",
    ),
    "rounds-empty": table_case("rounds.csv", "subject,delta_r1,theta2\n", ROUNDS, "no rows", "rounds.csv"),
    "choices-missing-column": table_case(
        "choices.csv", GOOD_CHOICES.replace(",z\n", ",reward\n"), CHOICES, "missing column", "choices.csv: field 'z'"
    ),
    "choices-off-grid": table_case(
        "choices.csv", _choices_line(2, "x", "8"), CHOICES, "grid coordinate 0..7", "choices.csv:3: field 'x'"
    ),
    "choices-bad-context": table_case(
        "choices.csv",
        _choices_line(3, "context", "spatail"),
        CHOICES,
        "spatial, conceptual",
        "choices.csv:4: field 'context'",
    ),
    "choices-fractional-round": table_case(
        "choices.csv", _choices_line(1, "round", "1.5"), CHOICES, "expected an integer", "choices.csv:2: field 'round'"
    ),
    "choices-reward-missing": table_case(
        "choices.csv", _choices_line(4, "z", ""), CHOICES, "expected a number", "choices.csv:5: field 'z'"
    ),
    "choices-duplicate-trial": table_case(
        "choices.csv", _choices_line(2, "trial", "1"), CHOICES, "appears twice", "choices.csv:3: field 'trial'"
    ),
    "choices-trial-gap": table_case(
        "choices.csv", _choices_line(4, "trial", "7"), CHOICES, "without gaps", "choices.csv: field 'trial'"
    ),
    "choices-unknown-subject": table_case(
        "choices.csv",
        GOOD_CHOICES,
        [*CHOICES, "--subject", "8"],
        "participant 8 is not in the data",
        "field '--subject'",
    ),
    "reproduce-subject-not-in-data": raw_case(
        None,
        "subject 9 is not in the data",
        "ids 1, 2",
        command=["ibo-reproduce", "--data", "{valid}", "--subject", "1,9", "--out", "{out}"],
    ),
    "context-with-hotspot": raw_case(
        None, "applies to --task gridsearch", "--context", command=[*SAMPLE, "--subject", "1", "--context", "spatial"]
    ),
    # --- command-line options -----------------------------------------------------------
    "unknown-model": raw_case(None, "--model", "invalid choice", command=[*SAMPLE, "--subject", "1", "--model", "v"]),
    "subject-out-of-range": raw_case(
        None, "subject 29 is not in the data", "ids 1, 2", command=[*SAMPLE, "--subject", "29"]
    ),
    "subject-not-a-number": raw_case(None, "--subject", "'x'", command=[*SAMPLE, "--subject", "x"]),
    "draws-zero": raw_case(None, "--draws", "'0'", command=[*SAMPLE, "--subject", "1", "--draws", "0"]),
    "chains-negative": raw_case(None, "--chains", "'-2'", command=[*SAMPLE, "--subject", "1", "--chains", "-2"]),
    "seed-negative": raw_case(None, "--seed", "'-1'", command=[*SAMPLE, "--subject", "1", "--seed", "-1"]),
    "plot-bad-suffix": raw_case(
        None,
        "--out",
        ".png or .pdf",
        command=["ibo-plot", "--subject", "1", "--data", "{valid}", "--out", "{case}/fig.svg"],
    ),
}


def build(dest: Path) -> dict:
    """Write every case (and the shared valid cohort ``_valid/raw``) under ``dest``; return the manifest."""
    dest = Path(dest)
    cohort(dest / "_valid" / "raw", (24, 24))
    index = {}
    for name, (make, spec) in sorted(CASES.items()):
        case = dest / name
        case.mkdir()
        make(case)
        index[name] = spec
    return index


def main(argv: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(argv[0]) if argv else Path(tmp)
        if argv and dest.exists():
            shutil.rmtree(dest)
        index = build(dest)
    (HERE / "cases.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")
    print(
        f"wrote the manifest of {len(index)} cases to {HERE / 'cases.json'}"
        + (f" and the cases to {dest}" if argv else "")
    )


if __name__ == "__main__":
    main(sys.argv[1:])
