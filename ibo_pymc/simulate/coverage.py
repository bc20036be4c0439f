"""The paper's coverage study (appendix C) with the grid engine.

For a generating acquisition function (family, parameter) and a number of
rounds n_obs, each replicate simulates n_obs rounds with gamma = 0.25 and
w = 0.5 around the exact argmax of the acquisition function at each drawn
delta_r1 (:func:`~ibo_pymc.simulate.moves.simulate_moves` with ``exact=True``,
as appendix C computes it; the fit then sees the tables' interpolated curves,
which matters at n_obs = 1000), fits model u with
the paper's grid method and takes the 95% credible set of acquisition
functions (the highest-mass (family, parameter) cells, gamma marginalised).

The credible region is by default the 95% highest-mass set of the *joint*
grid cells (family, parameter, gamma), and a function is covered when any of
its cells is in it (``region="joint"``). This is what reproduces appendix C:
with gamma summed out first (``region="marginal"``, the set of acquisition
functions of :meth:`GridFit.credible_set`) coverage at n_obs = 10 and 100 is
0.03-0.14 lower than the published values.

The default tables are the *corrected* ones (true EI curves). The published
Tables 1-2 came from tables whose EI curves are PI curves, but appendix C
cannot have: its Table 4 finds no EI function in the credible sets of PI(1)
data at n_obs >= 100, which is impossible when EI(1) and PI(1) are one curve.
``preset="published"`` gives the other tables.

* Table 3 (truth in the inference class): does the region contain the true
  function? A true parameter between grid nodes (p = 0.75) counts as covered
  when the set holds the node nearest to it.
* Table 4 (generating family omitted from the inference class): does the set
  contain any function of each of the two other families?

Replicates run in parallel processes, each with its own seed from one
:class:`numpy.random.SeedSequence`, so a cell is reproducible for a seed
whatever the number of workers.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ibo_pymc.grid.engine import credible_cells
from ibo_pymc.simulate.moves import Truth, simulate_moves

#: the generating functions of the paper's appendix C
PAPER_CELLS = {"PI": (1.0, 15.0, 30.0), "EI": (0.0, 15.0, 30.0), "UCB": (0.5, 0.75, 0.99)}
PAPER_N_OBS = (10, 100, 1000)
_FAMILY_CODES = {"PI": 0, "EI": 1, "UCB": 2}
#: credible regions: "joint" = highest-mass (family, parameter, gamma) cells; "marginal" = gamma summed out first
REGIONS = ("joint", "marginal")


def subset_tables(tables, families):
    """The same tables restricted to some families (no recomputation)."""
    from ibo_pymc.forward.argmax import ArgmaxTables

    cfg = tables.config
    idx = [cfg.families.index(f) for f in families]
    sub = dataclasses.replace(cfg, families=tuple(families), family_bounds=tuple(cfg.family_bounds[i] for i in idx))
    return ArgmaxTables(sub, np.ascontiguousarray(tables.values[idx]))


@dataclass(frozen=True)
class CoverageCell:
    family: str
    param: float
    n_obs: int
    reps: int
    omit: bool
    hits: dict  # "truth" or another family -> number of replicates covered

    def rate(self, key: str = "truth") -> float:
        return self.hits[key] / self.reps

    def mcse(self, key: str = "truth") -> float:
        p = self.rate(key)
        return float(np.sqrt(max(p * (1 - p), 1.0 / self.reps) / self.reps))

    def rows(self) -> list[dict]:
        return [
            {"family": self.family, "param": self.param, "n_obs": self.n_obs, "omit": self.omit, "covered": k,
             "coverage": self.rate(k), "mcse": self.mcse(k), "reps": self.reps}
            for k in self.hits
        ]


def _credible_region(fit, mass: float, region: str) -> dict:
    """Per family, the mask (param_index, ...) of the grid cells in the credible region."""
    post = fit.posterior
    if region == "marginal":  # gamma (and tau) summed out: the set of acquisition functions
        post = post.sum([d for d in post.dims if d not in ("family", "param_index")])
    keep = credible_cells(post.values, mass)
    return dict(zip(fit.coords["family"], keep))


def _replicate_batch(args):
    family, param, n_obs, omit, seeds, mass, preset, region = args
    from ibo_pymc.forward.argmax import load_tables
    from ibo_pymc.grid.engine import GridConfig, fit_grid

    config = GridConfig.published() if preset == "published" else GridConfig()
    full = load_tables(config.tables)
    others = tuple(f for f in full.config.families if f != family)
    tables = subset_tables(full, others) if omit else full
    nodes = full.config.params(family)
    node = int(np.argmin(np.abs(nodes - param)))
    hits = {f: 0 for f in others} if omit else {"truth": 0}
    for s in seeds:
        rng = np.random.default_rng(s)
        obs = simulate_moves(Truth(family, param, gamma=0.25, w=0.5), n_obs, rng, tables=full, exact=True)
        fit = fit_grid(obs.delta_r1, obs.theta2, "u", config=config, tables=tables)
        keep = _credible_region(fit, mass, region)
        if omit:
            for f in others:
                hits[f] += bool(keep[f].any())
        else:
            hits["truth"] += bool(keep[family][node].any())
    return hits


def coverage(family: str, param: float, n_obs: int, reps: int, *, seed: int = 0, omit: bool = False, mass: float = 0.95,
             preset: str = "corrected", region: str = "joint", workers: int | None = None, progress=None) -> CoverageCell:
    """Coverage of one cell of Table 3 (``omit=False``) or Table 4 (``omit=True``)."""
    from ibo_pymc.forward.acquisition import get_family

    lo, hi = get_family(family).bounds
    if not lo <= param <= hi:
        raise ValueError(f"{family} parameter {param} is outside [{lo}, {hi}]")
    if seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed}")
    # every cell draws its own replicate seeds from (seed, cell): reproducible whatever the workers
    key = [seed, int(n_obs), round(param * 1000), _FAMILY_CODES.get(family, 9), int(omit)]
    seeds = np.random.SeedSequence(key).spawn(reps)
    workers = workers or min(2, os.cpu_count() or 1)
    n_batches = max(1, min(reps, 4 * workers))
    batches = [seeds[i::n_batches] for i in range(n_batches)]
    if region not in REGIONS:
        raise ValueError(f"unknown region {region!r}; expected one of {', '.join(REGIONS)}")
    jobs = [(family, param, n_obs, omit, b, mass, preset, region) for b in batches]
    total = None
    done = 0
    if workers == 1:
        results = map(_replicate_batch, jobs)
    else:
        ex = ProcessPoolExecutor(workers)
        results = ex.map(_replicate_batch, jobs)
    try:
        for h, b in zip(results, batches):
            total = h if total is None else {k: total[k] + h[k] for k in total}
            done += len(b)
            if progress:
                progress(done, reps)
    finally:
        if workers != 1:
            ex.shutdown()
    return CoverageCell(family, float(param), int(n_obs), int(reps), bool(omit), total)


def paper_table(reps: int, *, omit: bool = False, seed: int = 0, workers: int | None = None, preset: str = "corrected",
                region: str = "joint", progress=None) -> pd.DataFrame:
    """All 27 cells of Table 3 (or Table 4 with ``omit``) as rows."""
    rows = []
    for fam, params in PAPER_CELLS.items():
        for p in params:
            for n in PAPER_N_OBS:
                cell = coverage(fam, p, n, reps, seed=seed, omit=omit, workers=workers, preset=preset, region=region)
                rows += cell.rows()
                if progress:
                    progress(cell)
    return pd.DataFrame(rows)
