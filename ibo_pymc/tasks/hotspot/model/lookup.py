"""The differentiable argmax lookup (docs: explanation/model).

theta* of one round is the argmax table interpolated linearly in delta_r1 (data),
in the family's shape parameter and in tau. Since delta_r1 is data, the
delta_r1 interpolation is done once when the model is built: :class:`RoundTables`
holds, per family, the array ``T[param_index, tau_index, round]`` of theta* at
every observed round for every (parameter, tau) node. Inside the model the
lookup is then bilinear in (parameter, tau): four contiguous rows of ``T`` picked
by two scalar indices and mixed with two scalar weights. It costs O(rounds) per
evaluation, and its gradient flows through the two weights only (the tables are
constants).

Why tables, not the closed forms: the closed forms exist only for the
unaugmented UCB and PI (:func:`ibo_pymc.tasks.hotspot.forward.argmax.closed_form_theta_star`);
EI and every augmented function (tau > 0) need the tables anyway, and using one
lookup for all families keeps PI(xi = 0) and UCB(p = 0.5) the exact same curve,
as in the grid engine. The tables' theta resolution (1 degree by default) is far
below the behavioural noise (gamma >= 0.01 rad is the prior floor; fitted
gammas are around 0.2-0.5 rad).

Both a PyTensor and a NumPy version are provided; they are tested against each
other and against :meth:`ArgmaxTables.theta_star`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibo_pymc.tasks.hotspot.forward.argmax import ArgmaxTables


@dataclass(frozen=True)
class RoundTables:
    """theta* at a subject's observed delta_r1 for every table node.

    ``values`` has shape (family, param_index, tau_index, round). ``param_lo``
    and ``param_step`` (per family) and ``tau_step`` describe the uniform grids.
    """

    families: tuple[str, ...]
    values: np.ndarray
    param_lo: np.ndarray
    param_step: np.ndarray
    tau_step: float
    n_tau: int

    @classmethod
    def from_tables(cls, tables: ArgmaxTables, delta_r1, families=None, *, tau_zero_only: bool = False) -> RoundTables:
        """The tables at these delta_r1; ``tau_zero_only``: at the first tau node (tau = 0) alone, the
        unaugmented model's (``n_tau`` 1).

        The table is neither copied whole (the families' rows are taken only when they are not all of them, in
        their order) nor interpolated at tau nodes that are then dropped: a fit's start-up interpolated all
        30 tau nodes of the 6 MB table for the unaugmented model, which keeps one."""
        cfg = tables.config
        families = tuple(families or cfg.families)
        fidx = [tables.family_index(f) for f in families]
        i, f = tables.delta_r1_weights(np.asarray(delta_r1, float))
        v = tables.values[:, :, :1] if tau_zero_only else tables.values  # a view
        if fidx != list(range(v.shape[0])):
            v = v[fidx]
        values = np.take(v, i, axis=-1) * (1.0 - f) + np.take(v, i + 1, axis=-1) * f
        pm = cfg.param_matrix[fidx]
        tau = cfg.tau
        if not (
            np.allclose(np.diff(pm, axis=1), (pm[:, 1] - pm[:, 0])[:, None])
            and np.allclose(np.diff(tau), tau[1] - tau[0] if len(tau) > 1 else 0)
        ):
            raise ValueError("the lookup needs uniform parameter and tau grids")
        return cls(
            families=families,
            values=np.ascontiguousarray(values),
            param_lo=pm[:, 0].copy(),
            param_step=(pm[:, 1] - pm[:, 0]).copy(),
            tau_step=float(tau[1] - tau[0]) if len(tau) > 1 else 1.0,
            n_tau=1 if tau_zero_only else len(tau),
        )

    @property
    def n_param(self) -> int:
        return self.values.shape[1]

    def index(self, family: str) -> int:
        return self.families.index(family)


def _knot(x, lo, step, n, xp):
    pos = xp.clip((x - lo) / step, 0.0, n - 1.0)
    i = xp.clip(xp.floor(pos), 0, n - 2)
    return i, pos - i


def lookup_numpy(rt: RoundTables, family: str, param, tau, rounds=None) -> np.ndarray:
    """theta* of every round for draws of (param, tau): shape (draws..., rounds).

    ``param`` and ``tau`` broadcast against each other; ``rounds`` (an index
    array or boolean mask) restricts the rounds.
    """
    k = rt.index(family)
    T = rt.values[k] if rounds is None else rt.values[k][..., rounds]
    p = np.asarray(param, float)
    t = np.asarray(tau, float)
    p, t = np.broadcast_arrays(p, t)
    ip, wp = _knot(p, rt.param_lo[k], rt.param_step[k], rt.n_param, np)
    ip = ip.astype(int)
    if rt.n_tau == 1:
        it, wt = np.zeros_like(ip), np.zeros_like(wp)
        T = np.concatenate([T, T], axis=1)
    else:
        it, wt = _knot(t, 0.0, rt.tau_step, rt.n_tau, np)
        it = it.astype(int)
    wp, wt = wp[..., None], wt[..., None]
    return (1 - wp) * ((1 - wt) * T[ip, it] + wt * T[ip, it + 1]) + wp * (
        (1 - wt) * T[ip + 1, it] + wt * T[ip + 1, it + 1]
    )


def lookup_pytensor(T, param, tau, *, param_lo: float, param_step: float, tau_step: float):
    """PyTensor theta* of every round: ``T`` is one family's (param, tau, round) array.

    ``param`` and ``tau`` are scalars. Returns a vector over rounds.
    """
    import pytensor.tensor as pt

    n_param, n_tau = T.type.shape[0], T.type.shape[1]
    if n_param is None or n_tau is None:
        raise ValueError("T needs a static (param, tau) shape")
    ip, wp = _knot(param, param_lo, param_step, n_param, pt)
    ip = pt.cast(ip, "int64")
    if n_tau == 1:
        return (1 - wp) * T[ip, 0] + wp * T[ip + 1, 0]
    it, wt = _knot(tau, 0.0, tau_step, n_tau, pt)
    it = pt.cast(it, "int64")
    return (1 - wp) * ((1 - wt) * T[ip, it] + wt * T[ip, it + 1]) + wp * (
        (1 - wt) * T[ip + 1, it] + wt * T[ip + 1, it + 1]
    )
