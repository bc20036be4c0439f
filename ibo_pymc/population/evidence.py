"""Log model evidences of many fits, from the fit schema alone (any task): the table random-effects BMS reads."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd


def family_lme(fits: Iterable) -> pd.DataFrame:
    """One row per fit (index: its subject), one column per family: ``log p(data | family)`` of each fit
    (``component_evidence.family_log_evidence``). ``fits``: InferenceData in the fit schema, models with an
    ``idata``, or paths of saved fits. Random-effects BMS over the families of a cohort is
    ``random_effects_bms(family_lme(fits))``."""
    from pathlib import Path

    from ibo_pymc.engine.results import family_table
    from ibo_pymc.engine.schema import read_fit

    rows = {}
    for f in fits:
        idata = read_fit(f) if isinstance(f, (str, Path)) else getattr(f, "idata", f)
        subject = int(idata.posterior.attrs["subject"])
        if subject in rows:
            raise ValueError(f"subject {subject} appears twice among the fits")
        rows[subject] = family_table(idata)["log_evidence"]
    return pd.DataFrame(rows).T.rename_axis("subject").sort_index()
