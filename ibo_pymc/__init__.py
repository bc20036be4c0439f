"""ibo-pymc: inverse Bayesian optimization on PyMC.

Given the moves a person made in a search task, infer the acquisition function
(their exploration/exploitation strategy) that best explains them.
Implements Sandholtz, Miyamoto, Bornn & Smith, "Inverse Bayesian Optimization",
Bayesian Analysis (2022).

The flow of the package:

* :mod:`ibo_pymc.tasks.hotspot.data` -- raw hotspot logs -> rounds -> per-subject observations
* :mod:`ibo_pymc.tasks.hotspot.forward` -- surrogate, acquisition families, augmentation,
  argmax curves and lookup tables
* :mod:`ibo_pymc.tasks.hotspot.paper_grid` -- the paper's grid inference (the reference engine)
* :mod:`ibo_pymc.tasks.hotspot.model` -- the sampled PyMC model: fit, diagnostics, save and load
* :mod:`ibo_pymc.tasks.hotspot.compare`, :mod:`ibo_pymc.tasks.hotspot.regions` -- model comparison (LOO, held-out), credible regions
* :mod:`ibo_pymc.population` -- the population level: log model evidences, random-effects BMS
"""

import warnings as _warnings
from importlib.metadata import PackageNotFoundError, version

# Two warnings that the libraries below us print and that a user of this package
# cannot act on, silenced by their exact text (nothing else is filtered):
# - ArviZ 0.23 announces its coming refactor once a day on import;
# - PyTensor warns when it finds no BLAS to link against. Our densities are
#   Numba kernels and nutpie callbacks that do not use PyTensor's BLAS ops, so
#   linking one would change nothing here.
_warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning)
_warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS installation", category=UserWarning)

try:
    __version__ = version("ibo-pymc")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

from ibo_pymc.errors import InputError

__all__ = ["InputError", "__version__"]
