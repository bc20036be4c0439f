"""Maximum-likelihood fits with leave-one-round-out cross-validation: the published protocol.

Wu et al. (2020) fit each participant and context separately: for every round
k of rounds 1-9, the parameters maximise the likelihood of the other eight
rounds' choices (152), searched on the log scale in [-5, 5] each, and the
held-out round's negative log-likelihood (19 choices) is recorded. The
participant's ``nLL`` is the sum over the nine held-out rounds and
``R2 = 1 - nLL / (171 ln 64)``; the reported parameters are each the median
over the nine folds. The likelihood is the published one (``published=True``:
their clamps of q and of the chosen option's probability).

The authors searched with differential evolution (DEoptim, 200 generations of
30). Here every fold is maximised by L-BFGS-B with the analytic gradient from
several starting points: the local minima of the profile likelihood over a
grid of the surrogate parameter (:func:`profile`; for a fixed surrogate
parameter the inner problem in beta and tau is nearly concave; the whole data
on a grid of step 0.5, each fold on one of step 1), and the optima of the whole
data and of the earlier folds; the best of all is then walked along a fine
profile (step 0.05, :func:`_fine_profile`) and polished by Nelder-Mead; a second pass
(:func:`improve`) restarts every fold from all the optima found for the participant (the whole
data's local optima and every fold's) with a walk whose inner search starts in both of its basins,
keeping the better; a third pass polishes, by Nelder-Mead, each fold's three best points of a Sobol
exploration of the whole box (:func:`explore`: 512 points) and its best steps of the upper clamp's
staircase (:func:`staircase`: huge beta, tau at its lower bound, where the best step can be narrower than
0.005 in log beta). Both are evaluated per round once for the participant, so every fold ranks them by
its own training rounds at no extra cost. The third pass is what reaches the published optima that lie
in the clamps' stepped regions, where no gradient leads; it ends with a Nelder-Mead from the fold's best
with a wider simplex (side 0.5), which steps over the profile's finest kinks. The
likelihood has several modes (a participant may be fitted by a long
length-scale with a small temperature, or a short one with a large exploration
bonus), which is why a local search alone is not enough. The GP part of the likelihood depends on lambda only,
so the evaluation is dominated by one Cholesky factorisation per round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd
from scipy import optimize

from ibo_pymc.tasks.gridsearch.choice import choice_loglik
from ibo_pymc.tasks.gridsearch.data import GridRounds
from ibo_pymc.tasks.gridsearch.likelihood import THETA_NAME, loglik, posterior

#: the published search box, on the log scale
LOG_BOUNDS = (-5.0, 5.0)
#: the published models: name -> (surrogate, family)
MODELS = {"GP-UCB": ("GP", "UCB"), "BMT-UCB": ("BMT", "UCB")}


@dataclass(frozen=True)
class FoldFit:
    round: int
    train_nll: float
    test_nll: float
    theta: float
    beta: float
    tau: float


def _objective(choices, y, surrogate, family):
    def f(u):
        th, b, t = np.exp(u)
        ll, g = loglik(choices, y, surrogate, family, th, b, t, grad=True, published=True)
        # d/du = d/dx * x
        return -float(ll.sum()), -(g.sum(0) * np.exp(u))

    return f


#: the surrogate parameter's profile grid (log scale, the whole box)
PROFILE_THETA = tuple(np.arange(-5.0, 5.0001, 0.5))
#: the folds' coarser grid (they also start from the whole data's optimum and the earlier folds')
FOLD_PROFILE_THETA = tuple(np.arange(-5.0, 5.0001, 1.0))
#: fixed starting points of the inner (log beta, log tau) search
INNER_STARTS = ((-1.5, -3.0), (1.0, -1.0))


@numba.njit(cache=True, fastmath={"contract", "arcp"})
def _ucb_rounds(mu, sd, choices, lengths, beta, tau, out):
    """The published UCB choice rule with the posterior fixed: per round r, ``out[r]`` = (log-likelihood, its
    derivative in beta, in tau). The same quantity as the general kernel (:func:`.choice.choice_loglik`,
    ``published=True``) with the standard deviations given and without the surrogate parameter's derivative:
    the search over beta and tau calls it most, at half the cost."""
    R = mu.shape[0]
    P = mu.shape[2]
    q = np.empty(P)
    qb = np.empty(P)
    lo = math.log(1e-5)
    hi = math.log(0.99999)
    itau = 1.0 / tau
    for r in range(R):
        tot = 0.0
        g1 = 0.0
        g2 = 0.0
        for t in range(lengths[r] - 1):
            c = choices[r, t + 1]
            mx = -math.inf
            for p in range(P):
                s = sd[r, t, p]
                qv = mu[r, t, p] + beta * s
                if qv < 0.0001:
                    qv = 0.0001
                    s = 0.0
                elif qv > 100.0:
                    qv = 100.0
                    s = 0.0
                q[p] = qv
                qb[p] = s
                mx = max(mx, qv)
            se = 0.0
            sq = 0.0
            sb = 0.0
            for p in range(P):
                e = math.exp((q[p] - mx) * itau)
                se += e
                sq += e * q[p]
                sb += e * qb[p]
            lp = (q[c] - mx) * itau - math.log(se)
            if lp < lo:
                tot += lo
            elif lp > hi:
                tot += hi
            else:
                tot += lp
                g1 += (qb[c] - sb / se) * itau
                g2 -= (q[c] - sq / se) * itau * itau
        out[r, 0] = tot
        out[r, 1] = g1
        out[r, 2] = g2


class _Rule:
    """The published choice rule's log-likelihood per round for a fixed posterior, as a function of (beta, tau)."""

    def __init__(self, post, choices, y, family):
        self.post, self.choices, self.y, self.family = post, np.ascontiguousarray(choices, np.int64), y, family
        self.fast = family == "UCB"
        if self.fast:
            self.mu, self.sd = post[0], np.sqrt(post[1])
            self.lengths = np.full(self.choices.shape[0], self.choices.shape[1], np.int64)
            self.out = np.empty((self.choices.shape[0], 3))

    def __call__(self, beta, tau):
        """``(ll (R,), d ll / d beta (R,), d ll / d tau (R,))``."""
        if self.fast:
            _ucb_rounds(self.mu, self.sd, self.choices, self.lengths, float(beta), float(tau), self.out)
            return self.out[:, 0], self.out[:, 1], self.out[:, 2]
        ll, g = choice_loglik(self.post, self.choices, self.y, self.family, beta, tau, published=True)
        return ll, g[:, 1], g[:, 2]


def _value(choices, y, surrogate, family):
    """The objective's value alone (no gradient), per round: ``u -> nll (R,)``."""

    def f(u):
        th, b, t = np.exp(u)
        post = posterior(choices, y, surrogate, th, published=True)
        return -_Rule(post, choices, y, family)(b, t)[0]

    return f


def _inner(post, choices, y, family, starts):
    """max over (log beta, log tau) in the box with the surrogate's posterior fixed: (nll, (lb, ltau))."""
    rule = _Rule(post, choices, y, family)

    def f(v):
        b, t = np.exp(v)
        ll, gb, gt = rule(b, t)
        return -float(ll.sum()), -np.array([gb.sum() * b, gt.sum() * t])

    best = (math.inf, None)
    for s in starts:
        r = optimize.minimize(
            f,
            np.clip(s, *LOG_BOUNDS),
            jac=True,
            method="L-BFGS-B",
            bounds=[LOG_BOUNDS] * 2,
            options={"maxiter": 300, "ftol": 1e-12, "gtol": 1e-7},
        )
        if r.fun < best[0]:
            best = (float(r.fun), np.asarray(r.x, float))
    return best


def profile(choices, y, surrogate, family, grid=PROFILE_THETA):
    """The profile likelihood over the surrogate parameter's grid: ``(points (n, 3), nll (n,))``.

    For a fixed surrogate parameter the posterior is fixed, and the choice rule's log-likelihood is
    (up to the published clamps) concave in (1 / tau, beta / tau): the inner search over beta and
    tau finds its maximum from any start. The outer problem is one-dimensional, so the grid sees
    every mode of it.
    """
    pts, out = [], []
    warm = None
    for lt in grid:
        post = posterior(choices, y, surrogate, float(np.exp(lt)), published=True)
        starts = list(INNER_STARTS) if warm is None else [warm, INNER_STARTS[0]]
        nll, v = _inner(post, choices, y, family, starts)
        warm = v
        pts.append((lt, *v))
        out.append(nll)
    return np.array(pts), np.array(out)


def _distinct(points, tol=0.05):
    out = []
    for p in points:
        if all(np.max(np.abs(p - q)) > tol for q in out):
            out.append(p)
    return out


def _descend(f, x0):
    """L-BFGS-B with the analytic gradient in the box from ``x0`` (clipped into it): ``(nll, u)``."""
    r = optimize.minimize(
        f,
        np.clip(x0, *LOG_BOUNDS),
        jac=True,
        method="L-BFGS-B",
        bounds=[LOG_BOUNDS] * 3,
        options={"maxiter": 500, "ftol": 1e-12, "gtol": 1e-7},
    )
    return float(r.fun), np.asarray(r.x, float)


def _polish(fun, x0, maxfev, step: float = 0.25):
    """Nelder-Mead in the box from a simplex of side ``step``: the published objective has flat and stepped
    regions (its clamps), where gradients vanish; a simplex still moves there."""
    simplex = x0 + step * np.vstack([np.zeros(3), np.eye(3)])
    r = optimize.minimize(
        lambda u: fun(np.clip(u, *LOG_BOUNDS)),
        x0,
        method="Nelder-Mead",
        options={"maxfev": maxfev, "xatol": 1e-6, "fatol": 1e-9, "initial_simplex": simplex},
    )
    return float(r.fun), np.clip(r.x, *LOG_BOUNDS)


def explore(choices, y, surrogate, family, n: int, seed: int = 0):
    """``n`` quasi-random (scrambled Sobol, seeded) points of the whole box and the negative log-likelihood of
    every round at each: ``(points (n, 3), nll (n, R))``. Rounds are independent, so one evaluation serves
    the whole data and every fold (a fold's value is the sum over its training rounds)."""
    from scipy.stats import qmc

    lo, hi = LOG_BOUNDS
    points = lo + (hi - lo) * qmc.Sobol(3, scramble=True, seed=seed).random(n)
    value = _value(choices, y, surrogate, family)
    return points, np.array([value(u) for u in points])


#: the surrogate parameter's grid of the staircase scan (log scale)
STAIR_THETA = tuple(np.arange(-5.0, 5.0001, 0.25))


def staircase(choices, y, surrogate, family, grid=STAIR_THETA):
    """The upper clamp's stepped region, scanned exactly: ``(points (n, 3), nll (n, R))``.

    With tau at its lower bound the softmax is nearly a hard maximum, and the clamp of q at 100 makes the
    likelihood in a large beta a staircase: the options whose ``mu + beta s`` exceeds 100 tie, and an option
    joins the tie at ``beta = (100 - mu) / s``. A chosen option joining it raises the likelihood by up to
    11.5 nats (its probability leaves the clamp at 1e-5), any other lowers it (one more in the tie), so the
    maxima lie where chosen options join. The best step can be narrower than 0.005 in log beta, so no grid or
    local search finds it. For every surrogate parameter of ``grid`` this evaluates, per round, the
    likelihood just past every chosen option's step of the whole data; a fold's steps are among them.
    """
    ch = np.asarray(choices)
    if family != "UCB":  # the staircase is UCB's: q = mu + beta s
        return np.empty((0, 3)), np.empty((0, ch.shape[0]))
    tau = math.exp(LOG_BOUNDS[0])
    lo, hi = math.exp(LOG_BOUNDS[0]), math.exp(LOG_BOUNDS[1])
    r_idx, t_idx = np.indices((ch.shape[0], ch.shape[1] - 1))
    chosen = ch[:, 1:]
    points, values = [], []
    for lt in grid:
        post = posterior(choices, y, surrogate, float(np.exp(lt)), published=True)
        rule = _Rule(post, choices, y, family)
        m, sd = rule.mu[r_idx, t_idx, chosen], rule.sd[r_idx, t_idx, chosen]
        ok = sd > 1e-9
        edges = np.unique((100.0 - m[ok]) / sd[ok]) * (1.0 + 1e-9)
        for b in edges[(edges > lo) & (edges < hi)]:
            points.append((lt, math.log(b), LOG_BOUNDS[0]))
            values.append(-rule(b, tau)[0])
    return np.array(points).reshape(-1, 3), np.array(values).reshape(len(points), ch.shape[0])


def _probe_starts(points, nll, k: int, tol: float = 0.5):
    """The ``k`` best of the probes (``nll`` (n,)), at least ``tol`` apart."""
    order = np.argsort(nll)
    return _distinct([points[i] for i in order[: 5 * k]], tol=tol)[:k]


def maximise(
    choices,
    y,
    surrogate,
    family,
    *,
    extra_starts=(),
    n_refine: int = 3,
    probes=None,
    grid=PROFILE_THETA,
    candidates: bool = False,
):
    """Best (negative log-likelihood, log-parameters): the profile's (on ``grid``) ``n_refine`` best local
    minima and ``extra_starts``, each polished by L-BFGS-B in all three parameters; the best walked along
    the fine profile (:func:`_fine_profile`) and polished by L-BFGS-B, then Nelder-Mead.

    ``probes = (points (n, 3), nll (n,))`` (from :func:`explore`) adds the best three of those points, each
    polished by Nelder-Mead: the published clamps make stepped regions (tiny tau, huge beta) whose lowest
    points no gradient leads to.
    """
    f = _objective(choices, y, surrogate, family)
    value = _total(_value(choices, y, surrogate, family))
    pts, scores = profile(choices, y, surrogate, family, grid)
    n = len(scores)
    minima = [
        i for i in range(n) if (i == 0 or scores[i] <= scores[i - 1]) and (i == n - 1 or scores[i] <= scores[i + 1])
    ]
    minima = sorted(minima, key=lambda i: scores[i])[:n_refine]
    starts = _distinct([pts[i] for i in minima] + [np.asarray(s, float) for s in extra_starts])
    i0 = int(np.argmin(scores))
    cands = [(float(scores[i0]), pts[i0].astype(float))]
    for s in starts:
        cands.append(_descend(f, s))
    if probes is not None:
        cands += [_polish(value, u, 300) for u in _probe_starts(*probes, 3, tol=0.0)]
    best = min(cands, key=lambda c: c[0])
    fine = _fine_profile(choices, y, surrogate, family, best[1])
    if fine[0] < best[0]:
        best = min([fine, _descend(f, fine[1])], key=lambda c: c[0])
    polished = _polish(value, best[1], 150)
    best = polished if polished[0] < best[0] else best
    if candidates:  # every local optimum met, best first: starting points for related problems (the folds)
        return best, [best] + sorted(cands, key=lambda c: c[0])
    return best


def _total(per_round):
    return lambda u: float(per_round(u).sum())


def improve(choices, y, surrogate, family, best, starts):
    """A second chance for an optimum ``best = (nll, u)``: L-BFGS-B from each of ``starts``, the best walked
    along the fine profile with the inner search started in both basins, then Nelder-Mead; ``best`` is
    kept unless beaten."""
    f = _objective(choices, y, surrogate, family)
    cands = [best]
    for s in _distinct([np.asarray(u, float) for u in starts]):
        cands.append(_descend(f, s))
    top = min(cands, key=lambda c: c[0])
    fine = _fine_profile(choices, y, surrogate, family, top[1], robust=True)
    top = min([top, fine], key=lambda c: c[0])
    polished = _polish(_total(_value(choices, y, surrogate, family)), top[1], 150)
    top = min([top, polished], key=lambda c: c[0])
    return top if top[0] < best[0] - 1e-9 else best


#: the fine profile's step in the log surrogate parameter, and how many steps without improvement end a walk
FINE_STEP, FINE_PATIENCE = 0.05, 4


def _fine_profile(choices, y, surrogate, family, u, robust: bool = False):
    """The profile likelihood on a fine grid of the surrogate parameter, walked from ``u`` in both
    directions until :data:`FINE_PATIENCE` steps in a row bring no improvement, the inner search warm
    along the walk: (nll, log-parameters) of its best point.

    The published clamps of q make the profile rugged at a scale finer than :data:`PROFILE_THETA`
    (neighbouring local minima 0.1 apart in log lambda, up to about 1 nat apart), and gradient steps
    stop at the clamps' kinks. Every point's inner search starts from the walk's last optimum and from beta
    at its lower bound, where many published optima lie; ``robust`` adds the fixed :data:`INNER_STARTS`:
    with the clamps the inner problem can have two basins (beta at its bound, or an interior beta), and a
    walk started in one would stay there.
    """
    post = posterior(choices, y, surrogate, float(np.exp(u[0])), published=True)
    start = _inner(post, choices, y, family, [np.asarray(u[1:], float)])
    best = (start[0], np.array([u[0], *start[1]]))
    for step in (FINE_STEP, -FINE_STEP):
        lt, warm, level, idle = float(u[0]), start[1], start[0], 0
        while idle < FINE_PATIENCE:
            lt += step
            if not LOG_BOUNDS[0] <= lt <= LOG_BOUNDS[1]:
                break
            post = posterior(choices, y, surrogate, float(np.exp(lt)), published=True)
            starts = [warm, np.array([LOG_BOUNDS[0], warm[1]])] + (list(INNER_STARTS) if robust else [])
            nll, warm = _inner(post, choices, y, family, starts)
            if nll < level - 1e-9:
                level, idle = nll, 0
            else:
                idle += 1
            if nll < best[0]:
                best = (nll, np.array([lt, *warm]))
    return best


#: Sobol points of the whole box evaluated per participant (per round), and how many of the best, for each
#: fold, are polished by Nelder-Mead with that many evaluations at most
N_PROBES, FOLD_PROBES, PROBE_FEV = 512, 3, 300
#: how many of a fold's best staircase steps (:func:`staircase`) are polished, if within this many nats of
#: the fold's optimum so far
STAIR_STARTS, STAIR_MARGIN = 2, 1.0
#: the last Nelder-Mead of every fold: its simplex's side (log scale) and evaluations at most
LAST_STEP, LAST_FEV = 0.5, 150


def cross_validate(gr: GridRounds, model: str) -> list[FoldFit]:
    """Leave-one-round-out fits of ``model`` over the rounds of ``gr`` (the published protocol).

    Three passes: each fold is maximised from its own profile and the optima of the whole data and of the
    folds before it; then each fold is given a second chance (:func:`improve`) from every optimum found (the
    whole data's local optima and all folds'); then a third from the best points, by the fold's own
    likelihood, of the participant's Sobol exploration (:func:`explore`) and of the clamp's staircase
    (:func:`staircase`; both evaluated per round once for all folds), each polished by Nelder-Mead, and a
    last Nelder-Mead with a wider simplex from the best. Each step keeps the better.
    """
    surrogate, family = MODELS[model]
    ch, y = gr.choices, gr.y
    points, per_round = explore(ch, y, surrogate, family, N_PROBES)
    step_points, steps = staircase(ch, y, surrogate, family)
    (_, u_all), whole = maximise(ch, y, surrogate, family, probes=(points, per_round.sum(1)), candidates=True)
    found = [u_all]  # every fold also starts from the optima of the whole data and of the folds before it
    optima = []
    for k in range(gr.n_rounds):
        train = np.arange(gr.n_rounds) != k
        nll, u = maximise(ch[train], y[train], surrogate, family, extra_starts=found, grid=FOLD_PROFILE_THETA)
        found = _distinct(found + [u])
        optima.append((nll, u))
    starts = _distinct(found + [c[1] for c in whole])
    folds = []
    for k in range(gr.n_rounds):
        train = np.arange(gr.n_rounds) != k
        nll, u = improve(ch[train], y[train], surrogate, family, optima[k], starts)
        value = _total(_value(ch[train], y[train], surrogate, family))
        third = _probe_starts(points, per_round[:, train].sum(1), FOLD_PROBES)
        fold_steps = steps[:, train].sum(1)  # the staircase's best steps for this fold, near its optimum
        third += [step_points[i] for i in np.argsort(fold_steps)[:STAIR_STARTS] if fold_steps[i] < nll + STAIR_MARGIN]
        for p in third:
            cand = _polish(value, p, PROBE_FEV)
            if cand[0] < nll - 1e-9:
                nll, u = cand
        # last, a wider simplex from the optimum: the profile can have local minima 0.005 apart in the
        # surrogate parameter (finer than the fine walk's step), and the narrower simplex stops at a kink
        cand = _polish(value, u, LAST_FEV, step=LAST_STEP)
        if cand[0] < nll - 1e-9:
            nll, u = cand
        th, b, t = np.exp(u)
        test = -float(loglik(ch[~train], y[~train], surrogate, family, th, b, t, published=True).sum())
        folds.append(FoldFit(int(gr.rounds[k]), nll, test, float(th), float(b), float(t)))
    return folds


def summarise(gr: GridRounds, model: str, folds: list[FoldFit]) -> dict:
    """One row of ``fits.csv``: nLL summed over the held-out rounds, R2, parameters' medians over folds."""
    surrogate, _ = MODELS[model]
    nll = sum(f.test_nll for f in folds)
    n = gr.n_choices
    theta = float(np.median([f.theta for f in folds]))
    return {
        "participant": gr.subject,
        "context": gr.context,
        "model": model,
        "nLL": nll,
        "R2": 1.0 - nll / (n * math.log(gr.options.size)),
        "lambda": theta if THETA_NAME[surrogate] == "lambda" else np.nan,
        "beta": float(np.median([f.beta for f in folds])),
        "tau": float(np.median([f.tau for f in folds])),
        "error_variance": theta if THETA_NAME[surrogate] == "error_variance" else np.nan,
    }


def fit_participant(gr: GridRounds, models=tuple(MODELS)) -> tuple[list[dict], list[dict]]:
    """The published protocol for one participant and context: (rows of fits.csv, rows of folds.csv)."""
    rows, fold_rows = [], []
    for model in models:
        folds = cross_validate(gr, model)
        rows.append(summarise(gr, model, folds))
        fold_rows += [
            {
                "participant": gr.subject,
                "context": gr.context,
                "model": model,
                "round": f.round,
                "train_nLL": f.train_nll,
                "test_nLL": f.test_nll,
                "theta": f.theta,
                "beta": f.beta,
                "tau": f.tau,
            }
            for f in folds
        ]
    return rows, fold_rows


FITS_COLUMNS = ["participant", "context", "model", "nLL", "R2", "lambda", "beta", "tau", "error_variance"]


def reproduce(
    table: pd.DataFrame, subjects=None, *, contexts=("spatial", "conceptual"), models=tuple(MODELS), executor=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The published protocol for every (subject, context): ``(fits, folds)`` tables.

    One task of the execution layer per (subject, context), on any executor.
    """
    from ibo_pymc.execution import Job, run_jobs
    from ibo_pymc.tasks.gridsearch.data import grid_rounds

    subjects = sorted(table["subject"].unique()) if subjects is None else list(subjects)
    tasks = [
        Job(f"participant {s}, {c}", fit_participant, (grid_rounds(table, s, c), tuple(models)))
        for s in subjects
        for c in contexts
    ]
    results = run_jobs(tasks, executor, label="gridsearch reproduction").raise_failures().results
    rows = [r for res in results for r in res[0]]
    fold_rows = [r for res in results for r in res[1]]
    fits = pd.DataFrame(rows, columns=FITS_COLUMNS)
    return fits, pd.DataFrame(fold_rows)
