"""Acquisition families (paper eqs 3.8-3.10) and their registry.

A family is a small object: a name, the name of its one shape parameter, the
parameter's range, a default grid, and a function of the predictive mean ``mu``,
predictive sd ``sd``, incumbent ``f_best`` and the parameter. Any deterministic
acquisition function fits the method (paper section 4.2); users add their own
with :func:`register_family` and it flows through to the argmax tables.

The library evaluates PI and EI on the log scale (``log_value``) when searching
for argmaxes: the logarithm is monotone, so argmaxes are unchanged, and the log
scale keeps far-from-incumbent candidates from underflowing to exact ties.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ibo_pymc.tasks.hotspot.forward.priors import UniformPrior

ValueFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]

_SQRT_HALF_PI = np.sqrt(np.pi / 2.0)


@dataclass(frozen=True)
class AcquisitionFamily:
    """One acquisition family u(theta | delta_r1; param).

    Attributes
    ----------
    name : short label (``"PI"``).
    param_name : the shape parameter's name (``"xi"``); posterior variables are
        named ``f"{param_name}_{name.lower()}"`` (``xi_pi``).
    bounds : the parameter's range (the sampled model's uniform prior).
    value : ``value(mu, sd, f_best, param)`` -> acquisition value.
    log_value : optional monotone transform used for argmax searches.
    n_grid : default number of grid values (``linspace(*bounds, n_grid)``).
    """

    name: str
    param_name: str
    bounds: tuple[float, float]
    value: ValueFn
    log_value: ValueFn | None = None
    n_grid: int = 61
    description: str = field(default="", compare=False)

    @property
    def var_name(self) -> str:
        return f"{self.param_name}_{self.name.lower()}"

    @property
    def prior(self) -> UniformPrior:
        """The shape parameter's prior: uniform over ``bounds``."""
        return UniformPrior(*map(float, self.bounds))

    def grid(self, n: int | None = None) -> np.ndarray:
        return np.linspace(self.bounds[0], self.bounds[1], n or self.n_grid)

    def score(self, mu, sd, f_best, param) -> np.ndarray:
        """What the argmax search maximises (``log_value`` if given, else ``value``)."""
        fn = self.log_value or self.value
        return fn(mu, sd, f_best, param)


def incumbent(delta_r1) -> np.ndarray:
    """The best score so far relative to the start: ``max(0, delta_r1)``."""
    return np.maximum(0.0, np.asarray(delta_r1, dtype=float))


def _z(mu, sd, f_best, xi):
    return (mu - f_best - xi) / sd


def pi_value(mu, sd, f_best, xi):
    """Probability of improvement, ``Phi((mu - f+ - xi) / sd)``."""
    return special.ndtr(_z(mu, sd, f_best, xi))


def pi_log_value(mu, sd, f_best, xi):
    return special.log_ndtr(_z(mu, sd, f_best, xi))


def ei_value(mu, sd, f_best, xi):
    """Expected improvement, ``sd * (z Phi(z) + phi(z))``."""
    z = _z(mu, sd, f_best, xi)
    return sd * (z * special.ndtr(z) + np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi))


def ei_log_value(mu, sd, f_best, xi):
    """``log EI``, finite for every z.

    For z < 0, ``z Phi(z) + phi(z) = phi(z) (1 + z sqrt(pi/2) erfcx(-z / sqrt 2))``
    keeps the far-below-incumbent tail from underflowing; for z >= 0 the sum is
    at least ``phi(0)`` and is taken directly (erfcx of a large negative
    argument overflows, which would tie every such angle at +inf).
    """
    z = np.asarray(_z(mu, sd, f_best, xi), dtype=float)
    below = np.minimum(z, 0.0)
    tail = (
        -0.5 * below * below
        - 0.5 * np.log(2 * np.pi)
        + np.log(np.maximum(1.0 + below * _SQRT_HALF_PI * special.erfcx(-below / np.sqrt(2.0)), np.finfo(float).tiny))
    )
    above = np.maximum(z, 0.0)
    head = np.log(above * special.ndtr(above) + np.exp(-0.5 * above * above) / np.sqrt(2 * np.pi))
    return np.log(sd) + np.where(z < 0, tail, head)


def ucb_value(mu, sd, f_best, p):
    """Upper confidence bound: the p-quantile of the predictive, ``mu + sd Phi^-1(p)``."""
    return mu + sd * special.ndtri(p)


PI = AcquisitionFamily(
    "PI", "xi", (0.0, 30.0), pi_value, pi_log_value, description="probability of improvement over f+ + xi"
)
EI = AcquisitionFamily("EI", "xi", (0.0, 30.0), ei_value, ei_log_value, description="expected improvement over f+ + xi")
UCB = AcquisitionFamily("UCB", "p", (0.5, 0.99), ucb_value, description="p-quantile of the predictive")

_REGISTRY: dict[str, AcquisitionFamily] = {}


def register_family(family: AcquisitionFamily, *, replace: bool = False) -> AcquisitionFamily:
    """Make a family available by name to the tables, the grid engine and the models."""
    if family.name in _REGISTRY and not replace:
        raise ValueError(f"acquisition family {family.name!r} is already registered (pass replace=True)")
    lo, hi = family.bounds
    if not lo < hi:
        raise ValueError(f"family {family.name!r}: bounds must be increasing, got {family.bounds}")
    _REGISTRY[family.name] = family
    return family


def unregister_family(name: str) -> None:
    _REGISTRY.pop(name, None)


def get_family(name: str | AcquisitionFamily) -> AcquisitionFamily:
    if isinstance(name, AcquisitionFamily):
        return name
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown acquisition family {name!r}; registered: {', '.join(_REGISTRY)}") from None


def _code_fingerprint(code, h) -> None:
    """Feed what a code object computes (bytecode, constants, names; not its file or line numbers) into ``h``."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _code_fingerprint(c, h)
        else:
            h.update(repr(c).encode())


def _function_fingerprint(fn, h, depth: int = 0) -> None:
    code = getattr(fn, "__code__", None)
    if code is None:  # a builtin or a ufunc: its name is what it computes
        h.update(repr(getattr(fn, "__qualname__", fn)).encode())
        return
    _code_fingerprint(code, h)
    for cell in fn.__closure__ or ():
        v = cell.cell_contents
        _function_fingerprint(v, h, depth + 1) if callable(v) and depth < 3 else h.update(repr(v).encode())
    # module-level helpers it calls (e.g. _z inside pi_value), one level deep
    for name in code.co_names:
        g = fn.__globals__.get(name)
        if depth < 1 and callable(g) and getattr(g, "__module__", None) == fn.__module__ and hasattr(g, "__code__"):
            _function_fingerprint(g, h, depth + 1)


def family_fingerprint(name: str | AcquisitionFamily) -> str:
    """A hash of what a family computes: its value and log-value functions' code, bounds and grid size."""
    import hashlib

    fam = get_family(name)
    h = hashlib.sha256(repr((fam.name, fam.param_name, tuple(fam.bounds), fam.n_grid)).encode())
    for fn in (fam.value, fam.log_value):
        if fn is not None:
            _function_fingerprint(fn, h)
    return h.hexdigest()[:16]


def family_payload(name: str | AcquisitionFamily) -> str:
    """A registered family as text (cloudpickle, base64): it travels with a configuration to a saved fit
    or a fresh worker process, where :func:`restore_family` registers it again."""
    import base64

    import cloudpickle

    return base64.b64encode(cloudpickle.dumps(get_family(name))).decode("ascii")


def restore_family(payload: str) -> AcquisitionFamily:
    """Register the family of a :func:`family_payload` unless the same one is registered.

    A different family registered under the same name is an error (the
    payload's tables would silently be computed with the other one).
    """
    import base64
    import pickle

    fam = pickle.loads(base64.b64decode(payload.encode("ascii")))
    if fam.name in _REGISTRY:
        if family_fingerprint(fam.name) != family_fingerprint(fam):
            raise ValueError(
                f"acquisition family {fam.name!r} is registered with another definition than the one "
                "this configuration was made with"
            )
        return _REGISTRY[fam.name]
    return register_family(fam)


#: the families every process knows without registering them
BUILTIN_FAMILIES = ("PI", "EI", "UCB")


def registered_families() -> tuple[str, ...]:
    return tuple(_REGISTRY)


for _f in (PI, EI, UCB):
    register_family(_f)

#: The paper's three families, in its order.
PAPER_FAMILIES = ("PI", "EI", "UCB")
