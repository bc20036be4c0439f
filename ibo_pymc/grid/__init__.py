"""The paper's grid inference: the reference engine and the reproduction of its tables."""

from ibo_pymc.forward.variants import MODELS
from ibo_pymc.grid.engine import TIE_ORDER, GridConfig, GridFit, fit_grid

__all__ = ["MODELS", "TIE_ORDER", "GridConfig", "GridFit", "fit_grid"]
