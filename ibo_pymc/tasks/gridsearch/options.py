"""The options a grid-search participant chooses among: a finite set of points with integer coordinates.

Wu et al. (2020) used an 8 x 8 grid (:data:`GRID_8X8`); Wu et al. (2018) a line of 30 options and an 11 x 11
grid (:func:`OptionSet.grid` ``(30, 1)`` and ``(11, 11)``); a user's own task may use any points. The surrogates
need the options' squared distances (the GP's RBF kernel; integers, so that the kernel is tabulated once per
length-scale), the local (inverse-distance) acquisition variants their Manhattan distances.

On a grid of ``nx x ny`` options the option at ``(x, y)`` has index ``ny * x + y`` (row-major), which is the
studies' own numbering: ``8 x + y`` in 2020, the arm ``x`` on the line and ``11 x + y`` on the 2018 grid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class OptionSet:
    """Options with integer coordinates ``coords`` (P, 2): option ``p`` is the point ``coords[p]``."""

    coords: np.ndarray
    name: str = ""
    #: (P, P) squared Euclidean distances, integers (the GP kernel's argument)
    sqdist: np.ndarray = field(init=False, repr=False)
    #: (P, P) Manhattan distances, integers (the local variants' distance)
    manhattan: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        c = np.asarray(self.coords)
        if c.ndim != 2 or c.shape[1] != 2 or len(c) < 2:
            raise ValueError(f"expected (P, 2) option coordinates with P >= 2, got shape {c.shape}")
        if not np.array_equal(c, np.round(c)):
            raise ValueError("option coordinates must be integers")
        c = np.ascontiguousarray(c, dtype=np.int64)
        if len(np.unique(c, axis=0)) != len(c):
            raise ValueError("two options share coordinates")
        diff = c[:, None, :] - c[None, :, :]
        object.__setattr__(self, "coords", c)
        object.__setattr__(self, "sqdist", np.ascontiguousarray((diff**2).sum(-1)))
        object.__setattr__(self, "manhattan", np.ascontiguousarray(np.abs(diff).sum(-1)))

    @classmethod
    def grid(cls, nx: int, ny: int = 1) -> OptionSet:
        """All points of ``0..nx-1 x 0..ny-1``, option ``ny * x + y`` = (x, y) (a line: ``ny = 1``)."""
        xs, ys = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
        return cls(np.column_stack([xs.ravel(), ys.ravel()]), name=f"{nx}x{ny}")

    @property
    def size(self) -> int:
        """The number of options, P."""
        return len(self.coords)

    def index(self, x, y) -> np.ndarray:
        """The option index of each point ``(x, y)``; a point that is not an option raises ``ValueError``."""
        lookup = {(int(a), int(b)): p for p, (a, b) in enumerate(self.coords)}
        x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        try:
            return np.array([lookup[(int(a), int(b))] for a, b in zip(x.ravel(), y.ravel())], dtype=np.int64).reshape(
                x.shape
            )
        except KeyError as exc:
            raise ValueError(f"the point {exc.args[0]} is not one of the {self.size} options") from None

    def __eq__(self, other) -> bool:
        return isinstance(other, OptionSet) and np.array_equal(self.coords, other.coords)

    def __hash__(self) -> int:
        return hash(self.coords.tobytes())


#: Wu et al. (2020)'s 8 x 8 grid: option ``8 x + y``
GRID_8X8 = OptionSet.grid(8, 8)
