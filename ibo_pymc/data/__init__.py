"""Data machinery every task shares: pinned fetching of a study's files (:mod:`.fetch`) and tidy tables of
a user's own data (:mod:`ibo_pymc.data.table`). Each task's own data module (e.g. :mod:`ibo_pymc.tasks.hotspot.data`)
declares its study's files and columns."""
