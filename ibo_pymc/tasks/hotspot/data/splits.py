"""Train/test splits of each subject's rounds (the paper's 80/20 protocol).

A split file has the columns ``subject,session_id,set`` with ``set`` in
{train, test}. The paper's split (the 80/20 split of every subject behind its Table 1; provided with the
study's materials as ``paper_splits.csv``) ships with the package: :func:`paper_split`. It is a list of round
ids, no observations; a test checks it against the copy beside the study's data. :func:`random_split` draws a
seeded 80/20 split per subject instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.data.rounds import HotspotData, SubjectObservations

SPLIT_COLUMNS = ("subject", "session_id", "set")
#: the paper's split, shipped with the package (module docstring)
PAPER_SPLIT = Path(__file__).with_name("paper_split.csv")


@dataclass(frozen=True)
class Split:
    """Which session ids are training rounds, per subject."""

    train: dict[int, frozenset]
    source: str

    def partition(self, obs: SubjectObservations) -> tuple[SubjectObservations, SubjectObservations]:
        """(training, test) observations of one subject."""
        train_ids = self.train.get(obs.subject, frozenset())
        mask = np.fromiter((s in train_ids for s in obs.session_id), dtype=bool, count=obs.n_rounds)
        if not mask.any():
            raise InputError(f"subject {obs.subject} has no training rounds", path=self.source)
        return obs.subset(mask), obs.subset(~mask)


def load_split(path: str | Path, data: HotspotData) -> Split:
    """Read and check a split file against the data's eligible rounds."""
    path = Path(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError("split file not found", path=path) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable CSV ({str(exc).splitlines()[0]})", path=path) from None
    missing = [c for c in SPLIT_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; expected {','.join(SPLIT_COLUMNS)}", path=path)
    eligible = data.eligible
    subject_of = dict(zip(eligible["session_id"].astype(int), eligible["subject"].astype(int)))
    train: dict[int, set] = {s: set() for s in data.subjects}
    seen = set()
    for i, row in enumerate(df.itertuples(index=False), start=2):
        try:
            subject = int(row.subject)
            sid = int(row.session_id)
        except ValueError:
            bad = "subject" if not row.subject.strip().lstrip("-").isdigit() else "session_id"
            raise InputError(
                f"expected a whole number, found {getattr(row, bad)!r}", path=path, line=i, field=bad
            ) from None
        s = row.set.strip().lower()
        if s not in ("train", "test"):
            raise InputError(f"expected 'train' or 'test', found {row.set!r}", path=path, line=i, field="set")
        if sid not in subject_of:
            raise InputError(
                f"session {sid} is not an eligible round of the data", path=path, line=i, field="session_id"
            )
        if subject_of[sid] != subject:
            raise InputError(
                f"session {sid} belongs to subject {subject_of[sid]}, not {subject}", path=path, line=i, field="subject"
            )
        if sid in seen:
            raise InputError(f"session {sid} is listed twice", path=path, line=i, field="session_id")
        seen.add(sid)
        if s == "train":
            train[subject].add(sid)
    for subject in data.subjects:
        if not train[subject]:
            raise InputError(f"subject {subject} has no training rounds in the split", path=path)
    unlisted = set(subject_of) - seen
    if unlisted:
        raise InputError(
            f"{len(unlisted)} eligible round(s) are not in the split, e.g. session {min(unlisted)}", path=path
        )
    return Split(train={k: frozenset(v) for k, v in train.items()}, source=str(path))


def random_split(data: HotspotData, *, train_fraction: float = 0.8, seed: int = 0) -> Split:
    """A seeded random split: round(train_fraction * n) training rounds per subject."""
    if not 0.0 < train_fraction <= 1.0:
        raise InputError(f"train fraction must be in (0, 1], got {train_fraction}", field="train_fraction")
    rng = np.random.default_rng(seed)
    train = {}
    for subject in data.subjects:
        ids = data.eligible.loc[data.eligible["subject"] == subject, "session_id"].to_numpy()
        k = max(1, int(np.floor(train_fraction * len(ids) + 0.5)))
        train[subject] = frozenset(rng.choice(ids, size=k, replace=False).tolist())
    return Split(train=train, source=f"random(seed={seed}, train_fraction={train_fraction})")


def split_frame(split: Split, data: HotspotData) -> pd.DataFrame:
    """The split as a ``subject,session_id,set`` table (for saving)."""
    e = data.eligible
    in_train = [sid in split.train.get(s, ()) for s, sid in zip(e["subject"], e["session_id"])]
    return pd.DataFrame(
        {
            "subject": e["subject"].to_numpy(),
            "session_id": e["session_id"].to_numpy(),
            "set": np.where(in_train, "train", "test"),
        }
    )


def paper_split(data: HotspotData) -> Split:
    """The paper's split (:data:`PAPER_SPLIT`), checked against ``data``: it fits the study's data only."""
    try:
        return load_split(PAPER_SPLIT, data)
    except InputError as exc:
        raise InputError(
            f"the paper's split does not fit this data ({exc.message}); give --split random or a split file",
            field="--split",
        ) from None
