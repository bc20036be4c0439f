"""How the engine fits a task's model: sampling, convergence and screening settings, one set of names for every task.

A task's configuration (e.g. :class:`~ibo_pymc.tasks.gridsearch.model.GridSearchConfig`) is a subclass that
adds what the task's model is (its surrogate, families, priors) and may change these defaults. Bad values
raise :class:`~ibo_pymc.errors.InputError` naming the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields

from ibo_pymc.errors import InputError

SAMPLERS = ("nutpie", "pymc")
#: settings added after fits were first saved, with the value that is the behaviour of the fits saved before
#: them: left out of the saved configuration (and so of its hash) at that value, so those fits keep their hash
_ADDED = {"max_strata": 1}
MASS_MATRICES = ("diag", "low_rank")
#: the convergence budget: the settings the engine's loop reads only once a component has missed the targets
#: (:meth:`EngineConfig.makes`)
BUDGET = ("max_thin", "max_strata")


#: the credible mass of every interval the package reports unless told otherwise, for every task: summaries,
#: reports, fits tables, plots, HDI regions and population tables (each takes ``hdi_prob`` or ``prob``;
#: ``ibo-sample --hdi-prob``). Coverage studies and the paper's grid protocol set their own.
HDI_PROB = 0.95


@dataclass(frozen=True)
class NUTSSettings:
    """The settings of a NUTS run that every configuration has, with their defaults: kept draws per chain,
    tuning steps, chains, seed, sampler (``nutpie`` or ``pymc``) and cores (threads for the chains; None: the
    engine's choice). :class:`EngineConfig` and the hotspot task's nested ``SamplerConfig`` both start with
    them, so the two cannot drift apart."""

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int = 0
    sampler: str = "nutpie"
    cores: int | None = None


@dataclass(frozen=True)
class EngineConfig(NUTSSettings):
    """Sampling (``draws``, ``tune``, ``chains``, ``seed``, ``sampler``, ``cores``, ``target_accept``,
    ``mass_matrix``), convergence (``target_rhat``, ``min_ess``, ``max_thin``, ``max_strata``, ``relevance``,
    ``rhat_decimals``) and screening (``screen``); the loop that uses them is
    :func:`~ibo_pymc.engine.fitting.fit_components`.

    ``max_thin``: a family that misses the convergence targets is sampled again ``thin`` = 2, 4, ... times
    longer (draws and tuning), keeping every ``thin``-th draw, up to ``max_thin`` (straight to the power of two
    that covers its ESS shortfall). ``max_strata``: how many
    strata a family whose draws show separated modes may be split into (1: never split; a task whose plan
    cannot restrict a prior never splits). ``relevance``: the
    posterior probability below which a family's convergence is not required. ``screen``: a family whose
    Laplace evidence is more than ``screen`` nats below the best family's is not sampled (its probability
    is below ``exp(-screen)``; its draws come from the Laplace normal); ``inf`` samples every family.
    ``rhat_decimals``: R-hat is compared with ``target_rhat`` after rounding to so many decimals (None:
    unrounded).
    """

    target_accept: float = 0.8
    mass_matrix: str = "diag"
    target_rhat: float = 1.01
    min_ess: float = 400.0
    max_thin: int = 8
    max_strata: int = 1
    relevance: float = 0.001
    rhat_decimals: int | None = None
    screen: float = math.inf

    def __new__(cls, *args, **settings):
        # an unknown setting is bad input naming it, for every task's configuration (not a TypeError)
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(names))
        if unknown:
            raise InputError(f"unknown setting; expected one of {', '.join(names)}", field=unknown[0])
        return super().__new__(cls)

    def __post_init__(self):
        for name in ("draws", "tune", "chains", "max_thin", "max_strata"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InputError(f"expected a whole number >= 1, got {v!r}", field=name)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"expected a whole number >= 0, got {self.seed!r}", field="seed")
        if self.sampler not in SAMPLERS:
            raise InputError(f"expected one of {', '.join(SAMPLERS)}, got {self.sampler!r}", field="sampler")
        if self.mass_matrix not in MASS_MATRICES:
            raise InputError(
                f"expected one of {', '.join(MASS_MATRICES)}, got {self.mass_matrix!r}", field="mass_matrix"
            )
        if not 0 < self.target_accept < 1:
            raise InputError(f"expected a number in (0, 1), got {self.target_accept!r}", field="target_accept")
        for name, ok, what in (
            ("target_rhat", self.target_rhat >= 1, "a number >= 1"),
            ("min_ess", self.min_ess > 0, "a number > 0"),
            ("relevance", 0 <= self.relevance < 1, "a number in [0, 1)"),
            ("screen", self.screen > 0, "a number > 0 (inf: no screening)"),
        ):
            if not ok:
                raise InputError(f"expected {what}, got {getattr(self, name)!r}", field=name)

    def replace(self, **changes):
        import dataclasses

        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            raise InputError(
                f"unknown setting; expected one of {', '.join(f.name for f in fields(self))}", field=unknown[0]
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The settings as JSON-ready values; a setting whose default is a float is written as a float, so that
        400 and 400.0 are one configuration (one hash)."""
        d = asdict(self)
        for f in fields(self):
            if isinstance(f.default, float) and isinstance(d[f.name], int) and not isinstance(d[f.name], bool):
                d[f.name] = float(d[f.name])
        d["screen"] = None if math.isinf(self.screen) else self.screen
        for name, value in _ADDED.items():  # a setting added later, at the value that was the behaviour before it
            if d[name] == value:
                del d[name]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict):
        d = dict(d)
        if d.get("screen", 0.0) is None:
            d["screen"] = math.inf
        # a setting absent from a saved configuration was saved before it existed: its behaviour then, not
        # today's default
        for name, value in _ADDED.items():
            d.setdefault(name, value)
        names = {f.name for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in names})

    def key(self, *, budget: bool = True) -> str:
        """A hash of everything that changes the draws (``cores`` changes only the speed); ``budget=False``
        leaves out the convergence budget (:data:`BUDGET`)."""
        d = self.to_dict()
        d.pop("cores", None)
        if not budget:
            for name in BUDGET:
                d.pop(name, None)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def makes(self, saved: EngineConfig, budget_used: bool) -> bool:
        """Whether a fit saved with configuration ``saved`` is the fit this configuration makes: the same hash,
        or the same but for the convergence budget when the fit used none of it (``budget_used`` False: every
        component met the targets in its first run, unsplit, so the loop never read ``max_thin`` or
        ``max_strata``; :func:`~ibo_pymc.engine.model.budget_used`).

        Why: raising a task's budget should refit the fits that could change, not every fit of a cohort."""
        return saved.key() == self.key() or (not budget_used and saved.key(budget=False) == self.key(budget=False))
