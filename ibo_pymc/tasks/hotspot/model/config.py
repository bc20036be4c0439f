"""The configuration of a fit, in three parts with one job each.

* :class:`ModelConfig`: *what* is fitted: the model variant (u, ũ, ũ±) and
  the argmax tables (families, grids, surrogate, augmentation rule); its
  :attr:`~ModelConfig.spec` is the model specification with every prior.
* :class:`SamplerConfig`: *how* it is sampled: draws, tune, chains, seed,
  back end (nutpie or ``pm.sample``), cores.
* :class:`ConvergencePolicy`: *when* it is done: R-hat and ESS targets, the
  relevance below which a family's convergence is not required, and how far
  the fit may go (strata per family, thinning).

:class:`FitConfig` is the engine's configuration
(:class:`~ibo_pymc.engine.config.EngineConfig`, the option names every task shares) with the model part
added; the three parts are views of it (``cfg.sampler_config``), and it is built from flat settings,
``FitConfig(model="tau", draws=2000)``, or from the parts (:meth:`FitConfig.from_parts`). It is saved
with every fit (NetCDF attrs ``config``, with the hashes ``config_hash`` of the whole and
``model_config_hash`` of the model part), so a saved fit is rebuilt exactly and never reused for another
configuration.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np

from ibo_pymc.engine.config import EngineConfig, NUTSSettings
from ibo_pymc.errors import InputError
from ibo_pymc.tasks.hotspot.forward.argmax import TableConfig
from ibo_pymc.tasks.hotspot.forward.variants import MODELS, ModelSpec

#: the NUTS back ends (:mod:`ibo_pymc.tasks.hotspot.model.samplers`)
SAMPLERS = ("nutpie", "pymc")


def _hash(d: dict) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ModelConfig:
    """The model: variant and argmax tables."""

    model: str = "tau_pm"
    tables: TableConfig = field(default_factory=TableConfig)

    def __post_init__(self):
        if self.model not in MODELS:
            raise InputError(f"unknown model {self.model!r}; expected one of {', '.join(MODELS)}", field="model")

    @property
    def spec(self) -> ModelSpec:
        """Variant, families and priors (:class:`~ibo_pymc.tasks.hotspot.forward.variants.ModelSpec`)."""
        return ModelSpec(self.model, self.tables.families)

    def to_dict(self) -> dict:
        return {"model": self.model, "tables": self.tables.to_dict()}

    def key(self) -> str:
        """A hash of the model alone: two fits with the same key fit the same model (whatever the sampler)."""
        return _hash(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        return cls(model=d["model"], tables=TableConfig.from_dict(d["tables"]))


@dataclass(frozen=True)
class SamplerConfig(NUTSSettings):
    """NUTS settings (per component of the stacked layout): the engine's :class:`~ibo_pymc.engine.config.NUTSSettings`
    as the nested part of the saved configuration. Tuning is 500 steps per chain: every chain starts from a
    draw of the grid posterior, and 500 converges all 84 default fits on three seeds where 300 does not
    (``models/sampling/tuning.csv``)."""

    tune: int = 500

    def __post_init__(self):
        if self.sampler not in SAMPLERS:
            raise InputError(
                f"unknown sampler {self.sampler!r}; expected one of {', '.join(SAMPLERS)}", field="sampler"
            )
        for name in ("draws", "tune", "chains"):
            _check_count(name, getattr(self, name), minimum=0 if name == "tune" else 1)
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise InputError(f"seed must be a non-negative integer, got {self.seed!r}", field="seed")


@dataclass(frozen=True)
class ConvergencePolicy:
    """When a fit is accepted, and how far it may go to get there (see :mod:`ibo_pymc.tasks.hotspot.model.fit`)."""

    target_rhat: float = 1.01
    min_ess: float = 400.0
    max_thin: int = 8
    max_strata: int = 3
    relevance: float = 1e-3

    def __post_init__(self):
        for name in ("max_thin", "max_strata"):
            _check_count(name, getattr(self, name), minimum=1)


def _check_count(name: str, v, minimum: int) -> None:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < minimum:
        raise InputError(
            f"{name} must be a{' positive' if minimum else ' non-negative'} integer, got {v!r}", field=name
        )


#: settings of the engine's configuration that the hotspot task's joint sampling does not use, at the only
#: value it accepts (another value is refused: an option that does not apply is never silently ignored)
_NOT_USED = {"target_accept": 0.8, "mass_matrix": "diag", "rhat_decimals": None, "screen": math.inf}
#: the order of the settings in the hash (:meth:`FitConfig.key`), the one the fits saved since the first
#: release recorded
_KEY_ORDER = (
    "model",
    "draws",
    "tune",
    "chains",
    "seed",
    "sampler",
    "cores",
    "target_rhat",
    "min_ess",
    "max_thin",
    "max_strata",
    "relevance",
    "tables",
)


@dataclass(frozen=True)
class FitConfig(EngineConfig):
    """The engine's configuration (:class:`~ibo_pymc.engine.config.EngineConfig`: sampling and convergence,
    one set of names for every task) with what the hotspot model is: the variant ``model`` and the argmax
    ``tables``. Read in three parts too (module docstring): :attr:`model_config`, :attr:`sampler_config`,
    :attr:`convergence`.

    >>> cfg = FitConfig(model="tau", draws=2000, seed=1)
    >>> cfg.model, cfg.draws, cfg.sampler_config.chains
    ('tau', 2000, 4)
    >>> cfg.replace(chains=2).chains
    2
    """

    model: str = "tau_pm"
    tables: TableConfig = field(default_factory=TableConfig)
    tune: int = SamplerConfig.tune
    max_strata: int = 3

    def __post_init__(self):
        super().__post_init__()
        ModelConfig(self.model, self.tables)  # checks the model
        if not isinstance(self.tables, TableConfig):
            raise InputError(f"expected a TableConfig, got {type(self.tables).__name__}", field="tables")
        for name, value in _NOT_USED.items():
            if getattr(self, name) != value:
                raise InputError(
                    f"does not apply to the hotspot task (its joint sampling has no such setting); "
                    f"expected {value!r}, got {getattr(self, name)!r}",
                    field=name,
                )

    @classmethod
    def from_parts(
        cls,
        model_config: ModelConfig | None = None,
        sampler_config: SamplerConfig | None = None,
        convergence: ConvergencePolicy | None = None,
        **settings,
    ) -> FitConfig:
        """From the three parts (each default when None), with flat settings on top."""
        flat = {}
        for part, kind in (
            (model_config, ModelConfig),
            (sampler_config, SamplerConfig),
            (convergence, ConvergencePolicy),
        ):
            if part is not None and not isinstance(part, kind):
                raise InputError(f"expected a {kind.__name__}, got {type(part).__name__}", field=kind.__name__)
            flat.update(
                dataclasses.asdict(part or kind())
                if kind is not ModelConfig
                else {"model": (part or kind()).model, "tables": (part or kind()).tables}
            )
        return cls(**{**flat, **settings})

    @property
    def model_config(self) -> ModelConfig:
        return ModelConfig(self.model, self.tables)

    @property
    def sampler_config(self) -> SamplerConfig:
        return SamplerConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(SamplerConfig)})

    @property
    def convergence(self) -> ConvergencePolicy:
        return ConvergencePolicy(**{f.name: getattr(self, f.name) for f in dataclasses.fields(ConvergencePolicy)})

    @property
    def spec(self) -> ModelSpec:
        return self.model_config.spec

    def settings(self) -> dict:
        """Every setting the hotspot task uses, flat (the tables as a dict)."""
        return {k: (self.tables.to_dict() if k == "tables" else getattr(self, k)) for k in _KEY_ORDER}

    def to_dict(self) -> dict:
        """The three parts as nested dicts (what a saved fit stores)."""
        return {
            "model": self.model_config.to_dict(),
            "sampler": dataclasses.asdict(self.sampler_config),
            "convergence": dataclasses.asdict(self.convergence),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def key(self) -> str:
        """A hash of the whole configuration (model, sampler, seed, targets, tables); saved with every fit.

        Computed over the flat settings in the order of the first release, so saved fits keep their hash.
        """
        return _hash(self.settings())

    def makes(self, saved, budget_used: bool) -> bool:
        """Whether a fit saved with ``saved`` is the fit of this configuration: for the hotspot task, the same hash
        (its joint run reruns every component on a thinning, and its strata are rows of their own, so the engine's
        reuse of fits that left their budget unused is not claimed here)."""
        return saved.key() == self.key()

    def model_key(self) -> str:
        """The hash of the model part alone (:meth:`ModelConfig.key`)."""
        return self.model_config.key()

    @classmethod
    def from_dict(cls, d: dict) -> FitConfig:
        """From :meth:`to_dict`, or from the flat dict fits saved before the split."""
        if "sampler" in d and isinstance(d.get("model"), dict):
            return cls.from_parts(
                ModelConfig.from_dict(d["model"]), SamplerConfig(**d["sampler"]), ConvergencePolicy(**d["convergence"])
            )
        d = dict(d)
        d["tables"] = TableConfig.from_dict(d["tables"])
        return cls(**d)


def config_difference(a: FitConfig, b: FitConfig) -> str:
    """The settings in which two configurations differ, as text."""
    da, db = a.settings(), b.settings()
    return ", ".join(f"{k} {da[k]!r} vs {db[k]!r}" for k in da if da[k] != db.get(k)) or "same settings"


def fit_file_name(subject: int, model: str, tag: str = "") -> str:
    """The one name of a saved fit: ``subject-NN-MODEL[TAG].nc`` (what ibo-sample writes and ibo-compare reuses)."""
    return f"subject-{int(subject):02d}-{model}{tag}.nc"
