"""The paper's grid inference: the reference engine and the reproduction of its tables."""

from ibo_pymc.tasks.hotspot.forward.variants import MODELS
from ibo_pymc.tasks.hotspot.paper_grid.engine import (
    TIE_ORDER,
    PaperGridConfig,
    PaperGridFit,
    fit_paper_grid,
)

__all__ = ["MODELS", "TIE_ORDER", "PaperGridConfig", "PaperGridFit", "fit_paper_grid"]
