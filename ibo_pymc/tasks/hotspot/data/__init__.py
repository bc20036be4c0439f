"""The hotspot data: raw logs -> rounds -> per-subject observations; fetching; splits."""

from ibo_pymc.tasks.hotspot.data.fetch import fetch, resolve_data_dir, verify
from ibo_pymc.tasks.hotspot.data.raw import RawLogs, read_raw_logs
from ibo_pymc.tasks.hotspot.data.rounds import (
    BURN_IN,
    HotspotData,
    SubjectObservations,
    derive,
    load_hotspot,
)
from ibo_pymc.tasks.hotspot.data.splits import Split, load_split, paper_split, random_split

__all__ = [
    "BURN_IN",
    "HotspotData",
    "RawLogs",
    "Split",
    "SubjectObservations",
    "derive",
    "fetch",
    "load_hotspot",
    "load_split",
    "paper_split",
    "random_split",
    "read_raw_logs",
    "resolve_data_dir",
    "verify",
]
