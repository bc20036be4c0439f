"""The configuration of a fit, in three parts with one job each.

* :class:`ModelConfig`: *what* is fitted: the model variant (u, ũ, ũ±) and
  the argmax tables (families, grids, surrogate, augmentation rule); its
  :attr:`~ModelConfig.spec` is the model specification with every prior.
* :class:`SamplerConfig`: *how* it is sampled: draws, tune, chains, seed,
  back end (nutpie or ``pm.sample``), cores.
* :class:`ConvergencePolicy`: *when* it is done: R-hat and ESS targets, the
  relevance below which a family's convergence is not required, and how far
  the fit may go (strata per family, thinning).

:class:`FitConfig` holds the three. It is built from the parts or from flat
settings, ``FitConfig(model="tau", draws=2000)``, and reads back flat
(``cfg.draws``). It is saved with every fit (NetCDF attrs ``config``, with
the hashes ``config_hash`` of the whole and ``model_config_hash`` of the model
part), so a saved fit is rebuilt exactly and never reused for another
configuration.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

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
class SamplerConfig:
    """NUTS settings (per component of the stacked layout)."""

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int | None = None
    sampler: str = "nutpie"
    cores: int | None = None

    def __post_init__(self):
        if self.sampler not in SAMPLERS:
            raise InputError(f"unknown sampler {self.sampler!r}; expected one of {', '.join(SAMPLERS)}", field="sampler")
        for name in ("draws", "tune", "chains"):
            _check_count(name, getattr(self, name), minimum=0 if name == "tune" else 1)
        if self.seed is not None and (not isinstance(self.seed, (int, np.integer)) or self.seed < 0):
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
        raise InputError(f"{name} must be a{' positive' if minimum else ' non-negative'} integer, got {v!r}", field=name)


_PARTS = {"model_config": ModelConfig, "sampler_config": SamplerConfig, "convergence": ConvergencePolicy}
#: flat setting -> the part that holds it
_OWNER = {f.name: part for part, cls in _PARTS.items() for f in dataclasses.fields(cls)}


@dataclass(frozen=True, init=False)
class FitConfig:
    """Model, sampler and convergence configuration of a fit (module docstring).

    >>> cfg = FitConfig(model="tau", draws=2000, seed=1)
    >>> cfg.model, cfg.draws, cfg.sampler_config.chains
    ('tau', 2000, 4)
    >>> cfg.replace(chains=2).chains
    2
    """

    model_config: ModelConfig
    sampler_config: SamplerConfig
    convergence: ConvergencePolicy

    def __init__(self, model_config: ModelConfig | None = None, sampler_config: SamplerConfig | None = None,
                 convergence: ConvergencePolicy | None = None, **settings):
        parts = {"model_config": model_config or ModelConfig(), "sampler_config": sampler_config or SamplerConfig(),
                 "convergence": convergence or ConvergencePolicy()}
        for part, value in parts.items():
            if not isinstance(value, _PARTS[part]):
                raise InputError(f"{part} must be a {_PARTS[part].__name__}, got {type(value).__name__}", field=part)
        unknown = sorted(set(settings) - set(_OWNER))
        if unknown:
            raise InputError(f"unknown fit setting {unknown[0]!r}; expected one of {', '.join(_OWNER)}", field=unknown[0])
        for part in parts:
            mine = {k: v for k, v in settings.items() if _OWNER[k] == part}
            if mine:
                parts[part] = dataclasses.replace(parts[part], **mine)
        for part, value in parts.items():
            object.__setattr__(self, part, value)

    def __getattr__(self, name: str):
        # flat read access to the parts' settings (cfg.draws, cfg.model, ...)
        part = _OWNER.get(name)
        if part is None:
            raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")
        return getattr(object.__getattribute__(self, part), name)

    def __reduce__(self):
        return (_rebuild, (self.model_config, self.sampler_config, self.convergence))

    def replace(self, **settings) -> FitConfig:
        """A copy with some flat settings (or whole parts) replaced."""
        parts = {p: settings.pop(p, getattr(self, p)) for p in _PARTS}
        return FitConfig(**parts, **settings)

    @property
    def spec(self) -> ModelSpec:
        return self.model_config.spec

    def settings(self) -> dict:
        """Every setting, flat (the tables as a dict)."""
        d = {}
        for part in _PARTS:
            d.update(dataclasses.asdict(getattr(self, part)))
        d["tables"] = self.model_config.tables.to_dict()
        return d

    def to_dict(self) -> dict:
        """The three parts as nested dicts (what a saved fit stores)."""
        return {"model": self.model_config.to_dict(), "sampler": dataclasses.asdict(self.sampler_config),
                "convergence": dataclasses.asdict(self.convergence)}

    def key(self) -> str:
        """A hash of the whole configuration (model, sampler, seed, targets, tables); saved with every fit.

        Computed over the flat settings, so fits saved before the configuration
        was split keep their hash.
        """
        order = ("model", "draws", "tune", "chains", "seed", "sampler", "cores", "target_rhat", "min_ess", "max_thin",
                 "max_strata", "relevance", "tables")
        s = self.settings()
        return _hash({k: s[k] for k in order})

    def model_key(self) -> str:
        """The hash of the model part alone (:meth:`ModelConfig.key`)."""
        return self.model_config.key()

    @classmethod
    def from_dict(cls, d: dict) -> FitConfig:
        """From :meth:`to_dict`, or from the flat dict fits saved before the split."""
        if "sampler" in d and isinstance(d.get("model"), dict):
            return cls(ModelConfig.from_dict(d["model"]), SamplerConfig(**d["sampler"]), ConvergencePolicy(**d["convergence"]))
        d = dict(d)
        d["tables"] = TableConfig.from_dict(d["tables"])
        model = ModelConfig(d.pop("model"), d.pop("tables"))
        return cls(model, **d)


def _rebuild(model_config, sampler_config, convergence) -> FitConfig:
    return FitConfig(model_config, sampler_config, convergence)


def config_difference(a: FitConfig, b: FitConfig) -> str:
    """The settings in which two configurations differ, as text."""
    da, db = a.settings(), b.settings()
    return ", ".join(f"{k} {da[k]!r} vs {db[k]!r}" for k in da if da[k] != db.get(k)) or "same settings"


def fit_file_name(subject: int, model: str, tag: str = "") -> str:
    """The one name of a saved fit: ``subject-NN-MODEL[TAG].nc`` (what ibo-sample writes and ibo-compare reuses)."""
    return f"subject-{int(subject):02d}-{model}{tag}.nc"
