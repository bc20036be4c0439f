"""The forward Bayesian-optimisation model shared by both inference paths.

surrogate (Bayesian linear model after move 1) -> acquisition families (PI, EI,
UCB, or your own) -> augmentation (tau, tau±) -> argmax curves and lookup tables.
"""

from ibo_pymc.tasks.hotspot.forward.acquisition import (
    EI,
    PAPER_FAMILIES,
    PI,
    UCB,
    AcquisitionFamily,
    get_family,
    incumbent,
    register_family,
    registered_families,
    unregister_family,
)
from ibo_pymc.tasks.hotspot.forward.argmax import (
    ArgmaxTables,
    TableConfig,
    argmax_curve,
    build_tables,
    closed_form_theta_star,
    load_tables,
)
from ibo_pymc.tasks.hotspot.forward.augmentation import (
    allowed_mask,
    allowed_window,
    augment,
)
from ibo_pymc.tasks.hotspot.forward.surrogate import Surrogate

__all__ = [
    "EI",
    "PAPER_FAMILIES",
    "PI",
    "UCB",
    "AcquisitionFamily",
    "ArgmaxTables",
    "Surrogate",
    "TableConfig",
    "allowed_mask",
    "allowed_window",
    "argmax_curve",
    "augment",
    "build_tables",
    "closed_form_theta_star",
    "get_family",
    "incumbent",
    "load_tables",
    "register_family",
    "registered_families",
    "unregister_family",
]
