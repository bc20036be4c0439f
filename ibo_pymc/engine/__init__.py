"""The inference engine every task shares.

* :mod:`.bridge` -- bridge sampling of a conditional posterior's normalising constant (a family's evidence)
* :mod:`.strata` -- where to split a component whose conditional posterior has separated modes
* :mod:`.mixing` -- normalising log weights; exact shares of a fixed number of draws
* :mod:`.samplers` -- what the tasks' NUTS back ends share

The per-family fitting loop (sampling, screening, strata, thinning, assembly)
still exists once per task (:mod:`ibo_pymc.tasks.hotspot.model.fit`,
:mod:`ibo_pymc.tasks.gridsearch.model`); it moves here as it is made generic.
"""
