"""The fine-grid posterior of the continuous model: the validator of the sampled fits.

The grid engine of :mod:`ibo_pymc.tasks.hotspot.paper_grid.engine` is the paper's method: the
argmax-table nodes as a discrete prior and w fixed by EM. The sampled model of
:mod:`ibo_pymc.tasks.hotspot.model` is continuous (the lookup interpolates between the nodes,
w has a uniform prior), so it needs its own exact reference. This module
integrates that continuous posterior numerically, one family at a time:

* every parameter of the family (shape parameter, gamma, w, tau or tau^-, tau^+)
  gets a midpoint rule over a box, starting from the whole prior;
* theta* at each (shape parameter, tau) point is the same interpolated lookup
  the sampled model uses (:func:`~ibo_pymc.tasks.hotspot.model.lookup.lookup_numpy`), so the
  integrand is exactly the model's likelihood, also between table nodes;
* for ũ± the two halves of the rounds depend on different taus, so
  ``sum over tau^-, tau^+`` factorises and costs two 4-d grids, not one 5-d grid;
* the box then shrinks, dimension by dimension, to the cells holding all but
  all but ``1e-8`` of the posterior mass at either end, plus one cell either side, and the rule is
  applied again (``levels`` times or until nothing shrinks), so posteriors much
  narrower than a table step (e.g. p_UCB = 0.500 +- 0.0003) are resolved.

The evidence of a family is the integral of likelihood x prior over the final
box (the mass outside it is negligible by construction); the family
probabilities follow with the prior 1/3 each. The sum of log densities over the
rounds is computed by :func:`_grid_loglik`, a parallel Numba loop that takes
one logarithm per block of rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba
import numpy as np
import pandas as pd

from ibo_pymc.tasks.hotspot.forward.priors import PRIORS
from ibo_pymc.tasks.hotspot.forward.variants import get_variant, tau_names
from ibo_pymc.tasks.hotspot.kernel import half_difference_sines, scale_terms
from ibo_pymc.tasks.hotspot.model.builder import SubjectData
from ibo_pymc.tasks.hotspot.model.lookup import lookup_numpy

#: points per dimension at every level
DEFAULT_POINTS = {"param": 40, "tau": 28, "gamma": 32, "w": 32}


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _grid_loglik(ts, sx, cx, gammas, ws):
    """sum_i log p(theta2_i | theta*_ai, gamma_g, w_v) for all a, g, v: shape (A, G, W).

    ``ts`` (A, N) theta* at A (shape parameter, tau) points; ``sx``, ``cx`` the
    sin and cos of half the observed theta2.
    """
    A, N = ts.shape
    G, W = gammas.shape[0], ws.shape[0]
    out = np.empty((A, G, W))
    for a in numba.prange(A):
        qm = np.empty(N)
        qp = np.empty(N)
        for i in range(N):
            st = math.sin(0.5 * ts[a, i])
            ct = math.cos(0.5 * ts[a, i])
            sm, sp = half_difference_sines(sx[i], cx[i], st, ct)  # sin((x -+ t) / 2)
            qm[i] = sm * sm
            qp[i] = sp * sp
        fa = np.empty(N)
        fb = np.empty(N)
        for g in range(G):
            sg, const, block = scale_terms(gammas[g], N)
            for i in range(N):
                fa[i] = 1.0 / (sg + qm[i])
                fb[i] = 1.0 / (sg + qp[i])
            for v in range(W):
                wv = ws[v]
                acc = 0.0
                for b0 in range(0, N, block):
                    prod = 1.0
                    for i in range(b0, min(b0 + block, N)):
                        prod *= fb[i] + wv * (fa[i] - fb[i])
                    acc += math.log(prod)
                out[a, g, v] = const + acc
    return out


def _midpoints(lo: float, hi: float, n: int) -> tuple[np.ndarray, float]:
    step = (hi - lo) / n
    return lo + step * (np.arange(n) + 0.5), step


def _lse(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = m + np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


@dataclass
class FamilyGrid:
    """One family's fine-grid result: log evidence, posterior means and sds, final cell widths."""

    family: str
    log_evidence: float
    mean: dict
    sd: dict
    step: dict
    box: dict
    levels: int


@dataclass
class FineGridPosterior:
    """Fine-grid posterior of a subject under one model (see the module docstring)."""

    model: str
    families: dict = field(repr=False)  # family -> FamilyGrid

    def family_probabilities(self) -> pd.Series:
        le = np.array([g.log_evidence for g in self.families.values()])
        p = np.exp(le - le.max())
        return pd.Series(p / p.sum(), index=list(self.families), name="probability")

    def log_evidence(self) -> pd.DataFrame:
        """Log evidence of each family and (row ``all``) of the model with the family marginalised (uniform
        prior over the families), as :func:`ibo_pymc.engine.results.log_evidence` gives it for a sampled fit;
        ``error`` is NaN here (a quadrature rule: compare two resolutions for its error)."""
        le = {f: g.log_evidence for f, g in self.families.items()}
        v = np.array(list(le.values()))
        le["all"] = float(v.max() + np.log(np.exp(v - v.max()).mean()))
        return pd.DataFrame({"log_evidence": le, "error": np.nan}).rename_axis("family")

    def mean(self, name: str) -> float:
        """Posterior mean of a shared parameter (gamma, w, tau, tau_neg, tau_pos), families mixed."""
        p = self.family_probabilities()
        return float(sum(p[f] * g.mean[name] for f, g in self.families.items()))

    def step(self, name: str, min_probability: float = 1e-3) -> float:
        """The widest final cell of a parameter over the families that carry posterior mass."""
        p = self.family_probabilities()
        return float(max(g.step[name] for f, g in self.families.items() if p[f] >= min_probability))


def fine_grid_family(
    sd: SubjectData, family: str, *, points: dict | None = None, levels: int = 5, tail: float = 1e-8, per_node: int = 4
) -> FamilyGrid:
    """The fine-grid posterior of one family (see the module docstring).

    ``points``: points per dimension (default :data:`DEFAULT_POINTS`); the shape
    parameter gets at least ``per_node`` points per table interval in the box,
    because theta* bends at the table nodes. ``tail``: the mass each end of a
    dimension may lose when the box shrinks.
    """
    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family

    pts = {**DEFAULT_POINTS, **(points or {})}
    model = sd.model
    taus = tau_names(model)
    theta2 = sd.theta2
    sx, cx = np.sin(0.5 * theta2), np.cos(0.5 * theta2)
    # each "half" is a set of rounds sharing one tau dimension (None: tau = 0)
    if get_variant(model).split_by_sign:
        halves = [(np.arange(sd.n_neg), "tau_neg"), (np.arange(sd.n_neg, len(theta2)), "tau_pos")]
        halves = [h for h in halves if len(h[0])]
    else:
        halves = [(np.arange(len(theta2)), taus[0] if taus else None)]
    prior = {"param": get_family(family).prior.bounds} | {n: PRIORS[n].bounds for n in ("gamma", "w", *taus)}
    box = dict(prior)
    for level in range(1, levels + 1):
        grid, step = {}, {}
        for name, (lo, hi) in box.items():
            n = pts["tau" if name.startswith("tau") else name]
            if name == "param":
                n = max(n, int(np.ceil(per_node * (hi - lo) / sd.rt.param_step[sd.rt.index(family)])))
            grid[name], step[name] = _midpoints(lo, hi, n)
        # J[p, g, v]: log posterior (unnormalised) of (param, gamma, w), taus summed out
        J = np.zeros((len(grid["param"]), len(grid["gamma"]), len(grid["w"])))
        cond_tau = {}
        for rounds, tname in halves:
            tv = grid[tname] if tname else np.zeros(1)
            P, K = len(grid["param"]), len(tv)
            ts = lookup_numpy(sd.rt, family, grid["param"][:, None], tv[None, :], rounds)  # (P, K, n)
            L = _grid_loglik(
                np.ascontiguousarray(ts.reshape(P * K, -1)), sx[rounds], cx[rounds], grid["gamma"], grid["w"]
            )
            L = L.reshape(P, K, len(grid["gamma"]), len(grid["w"]))
            if tname:
                lt = _lse(L, axis=1)
                J += lt + np.log(step[tname])
                cond_tau[tname] = np.exp(L - lt[:, None])  # p(tau | param, gamma, w), (P, K, G, W)
            else:
                J += L[:, 0]
        vol = sum(np.log(step[n]) for n in ("param", "gamma", "w"))
        log_z = float(_lse(J)) + vol
        post = np.exp(J - _lse(J))
        marg = {"param": post.sum((1, 2)), "gamma": post.sum((0, 2)), "w": post.sum((0, 1))}
        for t, c in cond_tau.items():
            marg[t] = np.einsum("pgw,pkgw->k", post, c)
        # shrink the box: drop cells from each end while they hold less than `tail` of the
        # mass together, then add one cell each side
        shrunk = False
        new_box = {}
        for name, m in marg.items():
            lo, hi = box[name]
            n = len(m)
            c = np.cumsum(m) / m.sum()
            a = max(int(np.searchsorted(c, tail)) - 1, 0)
            b = min(int(np.searchsorted(c, 1 - tail)) + 1, n - 1)
            nlo, nhi = lo + a * step[name], lo + (b + 1) * step[name]
            new_box[name] = (nlo, nhi)
            if (nhi - nlo) < 0.7 * (hi - lo):
                shrunk = True
        mean = {n: float((marg[n] * grid[n]).sum()) for n in marg}
        sd_ = {n: float(np.sqrt(max((marg[n] * (grid[n] - mean[n]) ** 2).sum(), 0.0))) for n in marg}
        if not shrunk or level == levels:
            break
        box = new_box
    log_prior = -sum(np.log(hi - lo) for lo, hi in prior.values())
    return FamilyGrid(family, log_z + log_prior, mean, sd_, step, box, level)


def fine_grid_posterior(sd: SubjectData, **kw) -> FineGridPosterior:
    """Fine-grid posterior of every family of a prepared subject (``SubjectData``)."""
    return FineGridPosterior(sd.model, {f: fine_grid_family(sd, f, **kw) for f in sd.families})


def family_probability_errors(idata) -> pd.Series:
    """The standard error of each family's probability from those of the families' log evidences (the delta
    method: ``dP_k / dlog Z_j = P_k (1[j = k] - P_j)``, the evidences' errors independent)."""
    from ibo_pymc.engine.results import log_evidence

    ev = log_evidence(idata).drop(index="all")
    logz, err = ev["log_evidence"].to_numpy(), ev["error"].to_numpy()
    p = np.exp(logz - logz.max())
    p /= p.sum()
    jac = p[:, None] * (np.eye(len(p)) - p[None, :])
    return pd.Series(np.sqrt((jac**2 * err[None, :] ** 2).sum(axis=1)), index=ev.index)


def compare_fit(idata, fine: FineGridPosterior, *, n_mcse: float = 3.0) -> pd.DataFrame:
    """A sampled fit against its fine-grid posterior: one row per family probability and shared mean.

    Family probabilities pass within 0.02, or within ``n_mcse`` standard errors where that is more: the error
    a probability inherits from the bridge-sampled log evidences (:func:`family_probability_errors`), so that
    a fit is held to the precision it reports. Means of gamma, w and the taus pass within ``n_mcse``
    Monte-Carlo standard errors plus one final grid cell.
    """
    import arviz as az

    post = idata.posterior
    rows = []
    fp = post["family_prob"].mean(("chain", "draw")).to_series()
    se = family_probability_errors(idata)
    for f, p in fine.family_probabilities().items():
        tol = max(0.02, n_mcse * float(se[f]))
        rows.append({"quantity": f"P({f})", "sampled": float(fp[f]), "fine_grid": float(p), "tolerance": tol})
    for name in ("gamma", "w", *tau_names(fine.model)):
        mcse = float(az.mcse(post[[name]], method="mean")[name])
        rows.append(
            {
                "quantity": f"mean {name}",
                "sampled": float(post[name].mean()),
                "fine_grid": fine.mean(name),
                "tolerance": n_mcse * mcse + fine.step(name),
            }
        )
    df = pd.DataFrame(rows).set_index("quantity")
    df["difference"] = df["sampled"] - df["fine_grid"]
    df["ok"] = df["difference"].abs() <= df["tolerance"]
    return df
