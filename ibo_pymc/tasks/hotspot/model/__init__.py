"""The sampled PyMC model (docs: explanation/model).

* :mod:`~ibo_pymc.tasks.hotspot.model.lookup` -- the differentiable argmax lookup
* :mod:`~ibo_pymc.tasks.hotspot.model.likelihood` -- the wrapped-Cauchy mixture as ``pm.CustomDist`` (density:
  :mod:`ibo_pymc.tasks.hotspot.kernel`)
* :mod:`~ibo_pymc.tasks.hotspot.model.op` -- lookup + likelihood fused into one PyTensor Op with its gradient
* :mod:`~ibo_pymc.tasks.hotspot.model.builder` -- the PyMC model of a subject (marginal or stacked layout)
* :mod:`~ibo_pymc.tasks.hotspot.model.generative` -- the same model written generatively, family marginalised by
  pymc-extras
* :mod:`~ibo_pymc.tasks.hotspot.model.compiled` -- the same density as a cached C callback for nutpie
* :mod:`~ibo_pymc.tasks.hotspot.model.evidence` -- bridge sampling of each family's marginal likelihood
* :mod:`~ibo_pymc.tasks.hotspot.model.fit` -- :class:`IBOModel`: fit, summarise, save, load
* :mod:`~ibo_pymc.tasks.hotspot.model.fine_grid` -- the fine-grid posterior that validates the fits
* :mod:`~ibo_pymc.tasks.hotspot.model.fit_many` -- many subjects' fits, saved as they finish (the execution layer)
* :mod:`~ibo_pymc.tasks.hotspot.model.hierarchical` -- what the engine's hierarchical model takes of a fit
  (``IBOModel(..., hierarchical=True)``)
"""

from ibo_pymc.tasks.hotspot.model.builder import build_model
from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel, diagnostics, summary
from ibo_pymc.tasks.hotspot.model.likelihood import WrappedCauchyMixture

__all__ = ["FitConfig", "IBOModel", "WrappedCauchyMixture", "build_model", "diagnostics", "summary"]
