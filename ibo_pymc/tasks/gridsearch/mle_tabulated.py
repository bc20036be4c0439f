"""Maximum likelihood for the published cross-validation protocols of many models: a tabulated profile, then
local polish (issue 32, item 3; Wu et al. 2018's 24 models).

Every fold of a participant trains on some rounds and tests on one (:meth:`.protocols.Protocol.folds`).
Rounds are independent, so the likelihood of a fold's training rounds is the sum of per-round
log-likelihoods, and one table of those serves every fold:

1. **The table.** For each surrogate parameter on a grid of the log box (:data:`THETA_STEP`) the surrogate's
   posterior before every choice is computed once, and each round's log-likelihood under the published choice
   rule is tabulated over a grid of the choice parameters: ``tau`` alone for the families without ``beta``
   (:data:`TAU_STEP`), ``(beta, tau)`` for UCB and its local variant (:data:`BETA_TAU_STEP`). The posterior
   depends on the surrogate parameter alone, so the table costs one posterior per grid point.
2. **Starting points per fold.** The fold's training sum over the table; its best grid points and its local
   minima (:func:`starting_points`). For a family without beta each start gets a twin, its tau moved to the best
   on a fine grid at its surrogate parameter (:func:`snap_table`, one posterior and one table row per start,
   shared by the folds of a horizon): the profile in the surrogate parameter has dips narrower than the starts'
   separation (PI's on the line, about 0.15 wide), and a start whose tau is off by half of :data:`TAU_STEP`
   leaves the dip.
3. **Polish.** L-BFGS-B from each in the log box with the exact gradient (the surrogate's and the choice
   rule's), then Nelder-Mead from the best (on the value alone): the published clamps make flat and stepped
   regions where gradients vanish.

The held-out round's negative log-likelihood is then evaluated at the fold's optimum. What the published code
searched with (differential evolution) matters only in that ours must be at least as good as theirs in every
fold; the tests check it against their saved folds.

The probability of maximum utility (PMU) costs about 1 ms per decision on the 11 x 11 grid (its Monte Carlo
estimate, :mod:`.choice`), a hundred times a UCB decision, so its search stays on grids (:func:`_pmu_search`):
the table's surrogate parameter on a coarse grid (:data:`PMU_THETA_STEP`), then each fold's best coarse point
and its neighbours half a step away, where every round's likelihood is tabulated on a fine grid of tau
(:data:`PMU_TAU_FINE`; PMU's values do not depend on tau, so that costs one evaluation per surrogate parameter
for all the folds of a horizon). On the line the
published PMU is 1 for every option (:mod:`.protocols`): the plain PMU models are at chance
(:attr:`.protocols.Protocol.chance`, reported without parameters), the local ones a local search, searched as
any family (no Monte Carlo there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ibo_pymc.tasks.gridsearch.choice import HAS_BETA, base_family, choice_loglik, choice_loglik_table
from ibo_pymc.tasks.gridsearch.likelihood import posterior
from ibo_pymc.tasks.gridsearch.rules import RULES, rule_code

#: grid steps on the log scale: the surrogate parameter (with beta; without, where the table is cheaper and the
#: profile in the surrogate parameter can have dips 0.1 wide, e.g. PI's at a long length-scale), tau alone, and
#: (beta, tau)
THETA_STEP, THETA_STEP_NO_BETA, TAU_STEP, BETA_TAU_STEP = 0.25, 0.05, 0.5, 0.5
#: PMU (module docstring): the surrogate parameter's coarse grid step and the refinement's offset around each
#: fold's best coarse point, and tau's fine grid (its margin around the folds' best taus, its step; log scale)
PMU_THETA_STEP, PMU_THETA_REFINE, PMU_TAU_FINE = 1.0, 0.5, (0.5, 0.005)
#: how many of the table's points (per fold) are polished (:func:`starting_points`): its best points at least the
#: first distance apart, then more of its local minima at least the second apart (log scale, any axis)
STARTS, START_SEPARATION, BASINS, BASIN_SEPARATION = 8, 0.5, 4, 1.0
#: for a family without beta, each start also snapped before the gradient search: its tau moved to the best training
#: nLL on a fine grid at the start's surrogate parameter (:func:`snap_table`), offsets up to the first, the second
#: apart (log scale). Both the start and its snapped twin are searched from: snapped starts alone missed optima the
#: tabulated ones find (the line: 3 folds of 31,104 worse, up to 0.065 nats, while 7 were better, up to 0.28).
#: Not for UCB: there moving tau alone leaves the ridge where beta and tau grow together, and L-BFGS-B from such
#: starts found worse optima (the line's participant 63, GP-UCB: 3 folds, up to 3.7 nats)
SNAP_HALF, SNAP_STEP = 0.5, 0.05
#: Nelder-Mead after the gradient search: first simplex side (log scale), evaluations at most per run, and runs
#: at most (each from the last one's result, its simplex ten times smaller, while it improves)
POLISH_STEP, POLISH_FEV, POLISH_RESTARTS = 0.25, 200, 4


@dataclass(frozen=True)
class FoldOptimum:
    """One fold's maximum-likelihood fit: the fold, the training and held-out negative log-likelihoods, and the
    parameters (natural scale; ``beta`` NaN for a family without it)."""

    horizon: int | None
    index: int
    train_nll: float
    test_nll: float
    theta: float
    beta: float
    tau: float


def has_beta(family: str) -> bool:
    return base_family(family) in HAS_BETA


class _Rounds:
    """One participant's rounds of one length (the rounds of a horizon), sliced to that length."""

    def __init__(self, gr, positions):
        self.positions = np.asarray(positions, int)
        n = int(gr.round_lengths[self.positions[0]])
        self.choices = np.ascontiguousarray(gr.choices[self.positions, :n])
        self.y = np.ascontiguousarray(gr.y[self.positions, :n])
        self.options = gr.options


def _rounds_nll(rounds, surrogate, family, rule, log_theta, betas, taus) -> np.ndarray:
    """``(B, T, R)``: every round's negative log-likelihood at one surrogate parameter (log scale) and each pair of
    choice parameters ``betas`` x ``taus`` (natural scale): one posterior and one table
    (:func:`.choice.choice_loglik_table`). The tabulated search's one way to score many points at a time."""
    post = posterior(rounds.choices, rounds.y, surrogate, math.exp(log_theta), published=rule, options=rounds.options)
    return -choice_loglik_table(
        post, rounds.choices, rounds.y, family, betas, taus, published=rule, options=rounds.options
    )


def tabulate(
    rounds: _Rounds, surrogate: str, family: str, rule, bounds, theta_step: float = THETA_STEP
) -> tuple[np.ndarray, np.ndarray]:
    """``(points (G, 2 or 3) on the log scale, nll (G, R))``: every grid point's negative log-likelihood of each
    of the rounds (module docstring, step 1; :func:`.choice.choice_loglik_table`)."""
    lo, hi = bounds
    theta = np.arange(lo, hi + 1e-9, theta_step)
    beta = has_beta(family)
    if beta:
        g = np.arange(lo, hi + 1e-9, BETA_TAU_STEP)
        betas, taus = g, g
    else:
        betas, taus = np.array([-np.inf]), np.arange(lo, hi + 1e-9, TAU_STEP)  # beta: none (exp(-inf) = 0)
    # the choice parameters of one surrogate parameter's block of the table, in the table's (beta, tau) order
    lb, ltau = (v.ravel() for v in np.meshgrid(betas, taus, indexing="ij"))
    phi = [lb, ltau] if beta else [ltau]
    points, values = [], []
    for lt in theta:
        table = _rounds_nll(rounds, surrogate, family, rule, lt, np.exp(betas), np.exp(taus))
        points.append(np.column_stack([np.full(ltau.size, lt), *phi]))
        values.append(table.reshape(-1, table.shape[-1]))
    return np.concatenate(points), np.concatenate(values)


def _objective(choices, y, surrogate, family, rule, options, beta: bool):
    """``u -> (nll, d nll / d u)`` of the rounds given, ``u`` the log-parameters ((theta, beta, tau) or (theta,
    tau)); its attribute ``value`` is ``u -> nll`` alone, for Nelder-Mead: without the gradient the GP's
    posterior costs a third."""

    def parameters(u):
        p = np.exp(u)
        return (p[0], p[1], p[2]) if beta else (p[0], 0.0, p[1])

    def f(u):
        th, b, t = parameters(u)
        post = posterior(choices, y, surrogate, th, grad=True, published=rule, options=options)
        ll, g = choice_loglik(post, choices, y, family, b, t, published=rule, options=options)
        g = -g.sum(0) * np.array([th, b, t])
        return -float(ll.sum()), (g if beta else g[[0, 2]])

    def value(u):
        th, b, t = parameters(u)
        post = posterior(choices, y, surrogate, th, published=rule, options=options)
        return -float(choice_loglik(post, choices, y, family, b, t, published=rule, options=options)[0].sum())

    f.value = value
    return f


def _distinct(points, k: int, tol: float):
    out = []
    for p in points:
        if all(np.max(np.abs(p - q)) >= tol for q in out):
            out.append(p)
            if len(out) == k:
                break
    return out


def starting_points(points, score) -> list:
    """The starting points of a fold's search from a table on a regular grid (``points`` in the order
    :func:`tabulate` makes them, ``score`` their training nLL): its :data:`STARTS` best points at least
    :data:`START_SEPARATION` apart, then up to :data:`BASINS` more of its local minima, best first, at least
    :data:`BASIN_SEPARATION` from each other and from those. The best points alone can all lie on one ridge
    (where beta and tau grow together, a grid step apart) while a narrower interior basin holds the optimum
    (test_a_ridge_does_not_hide_the_optimum); several best points near the best one serve the clamps' kinks."""
    from scipy import ndimage

    best = _distinct([points[i] for i in np.argsort(score, kind="stable")[: 50 * STARTS]], STARTS, START_SEPARATION)
    shape = tuple(np.unique(points[:, j]).size for j in range(points.shape[1]))
    grid = score.reshape(shape)
    minima = np.flatnonzero((ndimage.minimum_filter(grid, size=3, mode="nearest") == grid).ravel())
    basins = []
    for i in minima[np.argsort(score[minima], kind="stable")]:
        p = points[i]
        if all(np.max(np.abs(p - q)) >= START_SEPARATION for q in best) and all(
            np.max(np.abs(p - q)) >= BASIN_SEPARATION for q in basins
        ):
            basins.append(p)
            if len(basins) == BASINS:
                break
    return best + basins


def snap_table(rounds, surrogate, family, rule, bounds, start) -> tuple[np.ndarray, np.ndarray]:
    """``(points, nll (N, R))`` for a family without beta: ``start`` (log scale, (theta, tau)) with its tau moved
    by each offset of :data:`SNAP_HALF` and :data:`SNAP_STEP` (the start itself first, then nearest first, so
    that a tie keeps it; within the box), and every round's negative log-likelihood there: one posterior and one
    table row (:func:`_rounds_nll`)."""
    lo, hi = bounds
    n = int(round(SNAP_HALF / SNAP_STEP))
    offsets = SNAP_STEP * np.array([0] + [s * k for k in range(1, n + 1) for s in (-1, 1)], float)
    taus = start[-1] + offsets
    taus = taus[(taus >= lo - 1e-12) & (taus <= hi + 1e-12)]
    points = np.repeat(np.asarray(start, float)[None, :], taus.size, axis=0)
    points[:, -1] = taus
    return points, _rounds_nll(rounds, surrogate, family, rule, start[0], [0.0], np.exp(taus))[0]


def maximise(f, starts, bounds) -> tuple[float, np.ndarray]:
    """The best ``(nll, u)`` of L-BFGS-B from each start, then Nelder-Mead from the best (module docstring)."""
    lo, hi = bounds
    best = (math.inf, None)
    for s in starts:
        r = optimize.minimize(
            f,
            np.clip(s, lo, hi),
            jac=True,
            method="L-BFGS-B",
            bounds=[bounds] * len(s),
            options={"maxiter": 300, "ftol": 1e-12, "gtol": 1e-8},
        )
        if r.fun < best[0]:
            best = (float(r.fun), np.asarray(r.x, float))
    # Nelder-Mead restarted from its own result with a simplex ten times smaller, while it improves: the clamps
    # put kinks beside interior optima, where a simplex stalls at its first size
    step = POLISH_STEP
    for _ in range(POLISH_RESTARTS):
        u0 = best[1]
        d = len(u0)
        r = optimize.minimize(
            lambda u: f.value(np.clip(u, lo, hi)),
            u0,
            method="Nelder-Mead",
            options={
                "maxfev": POLISH_FEV,
                "xatol": 1e-9,
                "fatol": 1e-12,
                "initial_simplex": u0 + step * np.vstack([np.zeros(d), np.eye(d)]),
            },
        )
        if not r.fun < best[0] - 1e-12:
            break
        best = (float(r.fun), np.clip(r.x, lo, hi))
        step /= 10.0
    return best


def _pmu_search(rounds, fold_rounds, points, nll, surrogate, family, rule, bounds) -> list[tuple]:
    """PMU's search for the folds of one horizon (module docstring): ``(train nll, test nll, u)`` per fold,
    ``fold_rounds`` its ``(train, test)`` positions in ``rounds``, ``(points, nll)`` the coarse table. The
    surrogate parameters tried are each fold's best coarse point and its neighbours
    (:data:`PMU_THETA_REFINE`), every fold choosing among all of them; at each, every round's likelihood on
    tau's fine grid costs one PMU evaluation per decision, and the held-out round's is read from it."""
    lo, hi = bounds
    best = [points[int(np.argmin(nll[:, train].sum(1)))] for train, _ in fold_rounds]
    d = PMU_THETA_REFINE
    thetas = sorted({float(np.clip(u[0] + k, lo, hi)) for u in best for k in (-d, 0.0, d)})
    half, step = PMU_TAU_FINE
    t_lo, t_hi = max(lo, min(u[-1] for u in best) - half), min(hi, max(u[-1] for u in best) + half)
    taus = np.arange(t_lo, t_hi + 1e-9, step)
    fine = []
    for th in thetas:
        fine.append(_rounds_nll(rounds, surrogate, family, rule, th, [0.0], np.exp(taus))[0])  # (taus, rounds)
    out = []
    for train, test in fold_rounds:
        scores = [f[:, train].sum(1) for f in fine]
        k = min(range(len(thetas)), key=lambda i: scores[i].min())
        j = int(np.argmin(scores[k]))
        out.append((float(scores[k][j]), float(fine[k][j, test]), np.array([thetas[k], taus[j]])))
    return out


def cross_validate(gr, model, proto, *, horizons=None) -> list[FoldOptimum]:
    """Every fold of ``proto`` for one participant (``gr``) and one of its models (``model``, a
    :class:`.protocols.Model`), in the protocol's fold order; with ``horizons``, only the folds of those."""
    surrogate, family, rule, bounds = model.surrogate, model.family, proto.rule, proto.log_bounds
    beta = has_beta(family)
    # PMU's Monte Carlo estimate stays on grids; the line's published PMU is a constant, as cheap as any
    pmu = base_family(family) == "PMU" and rule_code(rule) != RULES["wu2018-line"]
    folds = [f for f in proto.folds(gr) if horizons is None or f.horizon in horizons]
    tables: dict = {}
    for fold in folds:  # a fold's rounds are those of its horizon (the protocol leaves one round of it out)
        if fold.horizon not in tables:
            rounds = _Rounds(gr, sorted({fold.test, *fold.train}))
            step = PMU_THETA_STEP if pmu else THETA_STEP if beta else THETA_STEP_NO_BETA
            tables[fold.horizon] = (rounds, *tabulate(rounds, surrogate, family, rule, bounds, step))

    def positions(fold):
        where = {int(p): i for i, p in enumerate(tables[fold.horizon][0].positions)}
        return np.array([where[p] for p in fold.train]), where[fold.test]

    located = {(f.horizon, f.index): positions(f) for f in folds}
    found = {}
    if pmu:
        for h, (rounds, points, nll) in tables.items():
            mine = [(f.horizon, f.index) for f in folds if f.horizon == h]
            got = _pmu_search(rounds, [located[k] for k in mine], points, nll, surrogate, family, rule, bounds)
            found.update(zip(mine, got))
    snaps: dict = {}  # (horizon, start) -> snap_table: folds of a horizon share most of their starts
    out = []
    for fold in folds:
        rounds, points, nll = tables[fold.horizon]
        train, test = located[(fold.horizon, fold.index)]
        if pmu:
            train_nll, test_nll, u = found[(fold.horizon, fold.index)]
        else:
            starts = starting_points(points, nll[:, train].sum(1))
            if not beta:  # then each start snapped (SNAP_HALF), where that moves it: both are searched from
                snapped = []
                for s in starts:
                    key = (fold.horizon, tuple(s))
                    if key not in snaps:
                        snaps[key] = snap_table(rounds, surrogate, family, rule, bounds, s)
                    near, values = snaps[key]
                    best = near[int(np.argmin(values[:, train].sum(1)))]
                    if not any(np.array_equal(best, q) for q in starts + snapped):
                        snapped.append(best)
                starts = starts + snapped
            f = _objective(rounds.choices[train], rounds.y[train], surrogate, family, rule, rounds.options, beta)
            train_nll, u = maximise(f, starts, bounds)
            one = slice(test, test + 1)
            g = _objective(rounds.choices[one], rounds.y[one], surrogate, family, rule, rounds.options, beta)
            test_nll = g(u)[0]
        p = np.exp(u)
        out.append(
            FoldOptimum(
                fold.horizon,
                fold.index,
                train_nll,
                float(test_nll),
                float(p[0]),
                float(p[1]) if beta else math.nan,
                float(p[-1]),
            )
        )
    return out


def _chance_folds(gr, proto) -> list[FoldOptimum]:
    """A model whose saved results are at chance (:attr:`.protocols.Protocol.chance`): every choice scored
    ``1 / K``, no parameters."""
    log_k = math.log(gr.options.size)
    out = []
    for fold in proto.folds(gr):
        scored = [int(gr.round_lengths[k]) - 1 for k in fold.train]
        out.append(
            FoldOptimum(
                fold.horizon,
                fold.index,
                sum(scored) * log_k,
                (int(gr.round_lengths[fold.test]) - 1) * log_k,
                math.nan,
                math.nan,
                math.nan,
            )
        )
    return out


def fit_participant(gr, protocol_name: str, models=None) -> tuple[list[dict], list[dict]]:
    """The published protocol ``protocol_name`` (:data:`.protocols.PROTOCOLS`) for one participant's rounds
    (``gr``) and ``models`` (names; default all of the protocol's): ``(rows of fits.csv, rows of folds.csv)``.
    A participant's ``nLL`` is the sum of the held-out rounds', its pseudo-R2 :meth:`.protocols.Protocol.r2`,
    its parameters the medians over folds."""
    from ibo_pymc.tasks.gridsearch.likelihood import THETA_NAME
    from ibo_pymc.tasks.gridsearch.protocols import protocol

    proto = protocol(protocol_name)
    rows, fold_rows = [], []
    for name in models or [m.name for m in proto.models]:
        m = proto.model(name)
        folds = _chance_folds(gr, proto) if name in proto.chance else cross_validate(gr, m, proto)
        nll = sum(f.test_nll for f in folds)
        theta = float(np.median([f.theta for f in folds]))
        rows.append(
            {
                "participant": gr.subject,
                "experiment": gr.context,
                "model": name,
                "surrogate": m.surrogate,
                "family": m.family,
                "nLL": nll,
                "R2": proto.r2(nll, gr),
                "lambda": theta if THETA_NAME[m.surrogate] == "lambda" else math.nan,
                "error_variance": theta if THETA_NAME[m.surrogate] == "error_variance" else math.nan,
                "beta": float(np.median([f.beta for f in folds])),
                "tau": float(np.median([f.tau for f in folds])),
            }
        )
        fold_rows += [
            {
                "participant": gr.subject,
                "experiment": gr.context,
                "model": name,
                "horizon": f.horizon,
                "fold": f.index,
                "train_nLL": f.train_nll,
                "test_nLL": f.test_nll,
                "theta": f.theta,
                "beta": f.beta,
                "tau": f.tau,
            }
            for f in folds
        ]
    return rows, fold_rows


def reproduce(table, experiment: str, subjects=None, *, models=None, executor=None):
    """Wu et al. (2018)'s protocol for every participant of one experiment (a table of the study,
    :mod:`.gridsearch2018`): ``(fits, folds)`` tables, one job of the execution layer per participant, the
    largest first (options x choices)."""
    import pandas as pd

    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.gridsearch.gridsearch2018 import grid_rounds

    d = table[table["experiment"] == experiment]
    subjects = sorted(int(s) for s in d["subject"].unique()) if subjects is None else list(subjects)
    jobs = []
    for s in subjects:
        gr = grid_rounds(table, s, experiment)
        jobs.append(
            Job(
                f"participant {s}, {experiment}",
                fit_participant,
                (gr, f"wu2018-{experiment}", None if models is None else tuple(models)),
                cost=float(gr.options.size * gr.n_choices),
            )
        )
    results = run_jobs(jobs, executor, label=f"wu2018-{experiment} reproduction").raise_failures().results
    fits = pd.DataFrame([r for res in results for r in res[0]])
    folds = pd.DataFrame([r for res in results for r in res[1]])
    return fits, folds
