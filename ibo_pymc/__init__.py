"""ibo-pymc: inverse Bayesian optimization on PyMC.

Given the moves a person made in a search task, infer the acquisition function
(their exploration/exploitation strategy) that best explains them.
Implements Sandholtz, Miyamoto, Bornn & Smith, "Inverse Bayesian Optimization",
Bayesian Analysis (2022), and brings other search tasks to the same engine.

The public API (``import ibo_pymc as ibo``; each name is imported on first use):

* models: :class:`IBOModelBase` (derive a task's model from it), :class:`EngineConfig`,
  :class:`GridSearchModel` and :class:`GridSearchConfig` (Wu et al. 2020), :class:`IBOModel` and
  :class:`FitConfig` (the hotspot task of the paper);
* building a task: :class:`Density`, :class:`PyTensorDensity`, :class:`LogNormalPrior`, :class:`UniformPrior`;
* tasks: :func:`get_task`, :func:`task_names`;
* fits: :func:`read_fit` (any saved fit, older formats brought to the fit schema), :func:`family_lme`;
* the population level: :func:`random_effects_bms`, :func:`family_bms`, :func:`exceedance_probabilities`,
  :class:`BMSResult`; the hierarchical model of several subjects, :class:`HierarchicalModel` (also
  ``SomeModel(observations, hierarchical=True)``) and :func:`fit_hierarchical` (on saved fits);
* errors: :class:`InputError`, :class:`DataIntegrityError`.

The flow of the package: :mod:`ibo_pymc.data` (fetching, tidy tables) -> :mod:`ibo_pymc.engine` (the model
base class, the fitting engine, the fit schema) -> :mod:`ibo_pymc.population` (BMS) -> :mod:`ibo_pymc.tasks`
(one package per task) -> :mod:`ibo_pymc.cli`.
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

#: public name -> the module that defines it (imported on first use: ``import ibo_pymc`` stays cheap)
_PUBLIC = {
    "IBOModelBase": "ibo_pymc.engine.model",
    "EngineConfig": "ibo_pymc.engine.config",
    "Density": "ibo_pymc.engine.density",
    "PyTensorDensity": "ibo_pymc.engine.density",
    "LogNormalPrior": "ibo_pymc.engine.priors",
    "UniformPrior": "ibo_pymc.engine.priors",
    "read_fit": "ibo_pymc.engine.schema",
    "HierarchicalModel": "ibo_pymc.engine.hierarchical",
    "fit_hierarchical": "ibo_pymc.engine.hierarchical",
    "family_lme": "ibo_pymc.population.evidence",
    "GridSearchModel": "ibo_pymc.tasks.gridsearch.model",
    "GridSearchConfig": "ibo_pymc.tasks.gridsearch.model",
    "IBOModel": "ibo_pymc.tasks.hotspot.model.fit",
    "FitConfig": "ibo_pymc.tasks.hotspot.model.config",
    "get_task": "ibo_pymc.tasks",
    "task_names": "ibo_pymc.tasks",
    "random_effects_bms": "ibo_pymc.population.bms",
    "family_bms": "ibo_pymc.population.bms",
    "exceedance_probabilities": "ibo_pymc.population.bms",
    "BMSResult": "ibo_pymc.population.bms",
    "DataIntegrityError": "ibo_pymc.data.fetch",
}


def __getattr__(name: str):
    if name in _PUBLIC:
        from importlib import import_module

        value = getattr(import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ibo_pymc' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = ["InputError", "__version__", *_PUBLIC]
