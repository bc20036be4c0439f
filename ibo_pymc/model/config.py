"""The configuration of a fit: the model variant, the sampler and the convergence policy (one frozen object).

It is saved with every fit (NetCDF attrs ``config`` and its hash ``config_hash``),
so a saved fit is rebuilt exactly and never reused for another configuration.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import numpy as np

from ibo_pymc.errors import InputError
from ibo_pymc.forward.argmax import TableConfig
from ibo_pymc.forward.variants import MODELS

#: the NUTS back ends (:mod:`ibo_pymc.model.samplers`)
SAMPLERS = ("nutpie", "pymc")


@dataclass(frozen=True)
class FitConfig:
    """Everything that defines a fit besides the data (stored in the NetCDF attrs)."""

    model: str = "tau_pm"
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int | None = None
    sampler: str = "nutpie"
    cores: int | None = None
    target_rhat: float = 1.01
    min_ess: float = 400.0
    max_thin: int = 8
    max_strata: int = 3
    relevance: float = 1e-3
    tables: TableConfig = field(default_factory=TableConfig)

    def __post_init__(self):
        if self.model not in MODELS:
            raise InputError(f"unknown model {self.model!r}; expected one of {', '.join(MODELS)}", field="model")
        if self.sampler not in SAMPLERS:
            raise InputError(f"unknown sampler {self.sampler!r}; expected one of {', '.join(SAMPLERS)}", field="sampler")
        for name in ("draws", "tune", "chains", "max_thin", "max_strata"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < (0 if name == "tune" else 1):
                raise InputError(f"{name} must be a positive integer, got {v!r}", field=name)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["tables"] = self.tables.to_dict()
        return d

    def key(self) -> str:
        """A hash of the whole configuration (model, sampler, seed, targets, tables); saved with every fit."""
        import hashlib

        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict) -> FitConfig:
        d = dict(d)
        d["tables"] = TableConfig.from_dict(d["tables"])
        return cls(**d)


def config_difference(a: FitConfig, b: FitConfig) -> str:
    """The settings in which two configurations differ, as text."""
    da, db = a.to_dict(), b.to_dict()
    return ", ".join(f"{k} {da[k]!r} vs {db[k]!r}" for k in da if da[k] != db.get(k)) or "same settings"


def fit_file_name(subject: int, model: str, tag: str = "") -> str:
    """The one name of a saved fit: ``subject-NN-MODEL[TAG].nc`` (what ibo-sample writes and ibo-compare reuses)."""
    return f"subject-{int(subject):02d}-{model}{tag}.nc"
