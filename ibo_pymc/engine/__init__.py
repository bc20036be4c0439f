"""The inference engine every task shares.

* :mod:`.model` -- :class:`~.model.IBOModelBase`, the model class a task derives its model from (fit, family
  probabilities, summary, diagnostics, LOO, plot, save and load are written there once)
* :mod:`.config` -- the engine's settings, one set of names for every task
* :mod:`.density` -- a family's log-density on the unconstrained scale; the adapters to nutpie (a compiled C
  callback, or a Python one) and to PyMC (a PyTensor Op)
* :mod:`.priors` -- priors with their maps to the real line
* :mod:`.fitting` -- the one fitting loop: NUTS per component, screening, strata, thinning, bridge evidences
* :mod:`.bridge` -- bridge sampling of a conditional posterior's normalising constant
* :mod:`.strata` -- where to split a component whose conditional posterior has separated modes
* :mod:`.assembly` -- the marginal posterior from the families' conditional ones, as InferenceData
* :mod:`.schema` -- the fit schema and the one reader of older files; :mod:`.results` reads a fit's
  evidences and probabilities
* :mod:`.mixing`, :mod:`.samplers` -- small numerics and sampler helpers

Both tasks' models are :class:`~.model.IBOModelBase` subclasses fitted by the one loop
(:func:`~.fitting.fit_components`); what differs is the sampling plan, the loop's one option a task chooses:
the grid-search task samples family by family (:class:`~.fitting.PerFamily`, with Laplace screening), the
hotspot task all families side by side in one NUTS run started from the paper's grid posterior
(:class:`~ibo_pymc.tasks.hotspot.model.sampling.JointSampling`). Bridge sampling, strata, thinning, the
nutpie adapter, priors, the results readers and LOO are the same for both.
"""
