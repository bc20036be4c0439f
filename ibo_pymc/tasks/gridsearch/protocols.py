"""The grid studies' published maximum-likelihood protocols as data (issue 32, item 3).

A protocol says which models a study fitted (their names as in the authors' result files, and the surrogate and
acquisition family each stands for), under which choice rule (:data:`~ibo_pymc.tasks.gridsearch.rules.RULES`),
in which search box (every parameter on the log scale), over which cross-validation folds, and how a
participant's pseudo-R2 is formed: ``1 - nLL / (n ln K)``, ``n`` the choices scored and ``K`` the options.

* ``wu2020`` (Wu et al. 2020, 8 x 8 grid): GP-UCB and BMT-UCB; the folds leave out each of the rounds fitted in
  turn and train on the others.
* ``wu2018-1d`` and ``wu2018-2d`` (Wu et al. 2018: the line of 30, the 11 x 11 grid): the two surrogates (the
  GP, ``RBF``, and the mean tracker, ``BMT``) times six acquisition functions (``UCB``, ``GM`` greedy mean, ``GV``
  greedy variance, ``EXI`` expected improvement, ``POI`` probability of improvement, ``PMU``), each also local
  (prefix ``L``): 24 models. The folds are within each horizon: the rounds of one length, in the order
  played, leave one out in turn and train on the others of that length (16 folds on the line, 8 on the grid).

Where the authors' code as published and their saved results disagree, a protocol follows the saved results
(checked fold by fold against them in the tests), and says so:

* the grid's ``RBFEXI`` results were made with the local EI (:data:`SAVED_AS`);
* the line's PMU gave every option the value 1 (the line code's reshape puts each option alone in its draw, so it
  is the maximum of every draw; the rule ``wu2018-line`` computes it so): the plain PMU models' results are at
  chance, every choice scored ``1/30`` (:attr:`Protocol.chance`), and the local ones' are a local search, the
  inverse distance from the previous choice in a softmax (whatever the surrogate: ``LRBFPMU`` and ``LBMTPMU``
  are the same model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ibo_pymc.errors import InputError

#: the 2018 result files' acquisition names -> the registry's families
ACQUISITION_NAMES = {"UCB": "UCB", "GV": "variance", "GM": "mean", "EXI": "EI", "POI": "PI", "PMU": "PMU"}
#: the 2018 result files' surrogate names -> the task's
SURROGATE_NAMES = {"RBF": "GP", "BMT": "BMT"}
#: (protocol, model name) -> the family its saved results were made with, where the name says otherwise
SAVED_AS = {("wu2018-2d", "RBFEXI"): "L-EI"}


@dataclass(frozen=True)
class Model:
    """One published model: its name in the authors' files, its surrogate and its acquisition family (the one
    the saved results were made with)."""

    name: str
    surrogate: str
    family: str


@dataclass(frozen=True)
class Fold:
    """One cross-validation fold of a participant: the horizon it belongs to (None: the study has one), its
    number within it (1-based, as the authors' files number it), the position of the held-out round among the
    participant's rounds, and the positions of the training rounds."""

    horizon: int | None
    index: int
    test: int
    train: tuple[int, ...]


@dataclass(frozen=True)
class Protocol:
    name: str
    #: the choice rule of the likelihood (:data:`~ibo_pymc.tasks.gridsearch.rules.RULES`)
    rule: object
    models: tuple[Model, ...]
    #: the search box of every parameter, on the log scale
    log_bounds: tuple[float, float]
    #: folds within each horizon (2018) or over all the rounds given (2020)
    by_horizon: bool
    #: the models whose saved results are at chance (module docstring)
    chance: frozenset = field(default_factory=frozenset)

    def model(self, name: str) -> Model:
        for m in self.models:
            if m.name == name:
                return m
        raise InputError(
            f"{name!r} is not a model of {self.name}; expected one of {', '.join(m.name for m in self.models)}",
            field="model",
        )

    def folds(self, gr) -> list[Fold]:
        """The folds of one participant's rounds (a :class:`~ibo_pymc.tasks.gridsearch.data.GridRounds`), in
        the order the authors' files list them (shorter horizons first)."""
        positions = np.arange(gr.n_rounds)
        if not self.by_horizon:
            return [Fold(None, k + 1, int(k), tuple(int(j) for j in positions if j != k)) for k in positions]
        horizons = gr.round_lengths - 1
        out = []
        for h in np.unique(horizons):
            same = positions[horizons == h]
            for k, test in enumerate(same):
                out.append(Fold(int(h), k + 1, int(test), tuple(int(j) for j in same if j != test)))
        return out

    def r2(self, nll: float, gr) -> float:
        """Pseudo-R2 of a participant's summed held-out nLL: against choosing at random among the options."""
        return 1.0 - nll / (gr.n_choices * math.log(gr.options.size))


def _models_2018(protocol: str) -> tuple[Model, ...]:
    out = []
    for local in ("", "L"):
        for kernel, surrogate in SURROGATE_NAMES.items():
            for acq, family in ACQUISITION_NAMES.items():
                name = f"{local}{kernel}{acq}"
                family = SAVED_AS.get((protocol, name), ("L-" if local else "") + family)
                out.append(Model(name, surrogate, family))
    return tuple(out)


PROTOCOLS = {
    "wu2020": Protocol(
        "wu2020",
        True,
        (Model("GP-UCB", "GP", "UCB"), Model("BMT-UCB", "BMT", "UCB")),
        (-5.0, 5.0),
        by_horizon=False,
    ),
    "wu2018-1d": Protocol(
        "wu2018-1d",
        "wu2018-line",
        _models_2018("wu2018-1d"),
        (-5.0, 4.0),
        by_horizon=True,
        chance=frozenset(f"{k}PMU" for k in SURROGATE_NAMES),
    ),
    "wu2018-2d": Protocol("wu2018-2d", "wu2018", _models_2018("wu2018-2d"), (-5.0, 5.0), by_horizon=True),
}


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise InputError(f"expected one of {', '.join(PROTOCOLS)}, got {name!r}", field="protocol") from None
