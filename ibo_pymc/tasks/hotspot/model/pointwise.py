"""theta* and the log-likelihood over posterior draws (NumPy, and a compiled loop for the log-likelihood).

Used after sampling (pointwise log-likelihood for PSIS-LOO, posterior
predictive draws, marginal likelihoods, family probabilities). Inputs are
arrays of draws (any common shape ``S``); outputs have shape ``S + (rounds,)``
in the :class:`~ibo_pymc.tasks.hotspot.model.builder.SubjectData` internal round order.
"""

from __future__ import annotations

import numpy as np

from ibo_pymc.tasks.hotspot.forward.variants import get_variant
from ibo_pymc.tasks.hotspot.model.builder import SubjectData
from ibo_pymc.tasks.hotspot.model.likelihood import wc_mixture_logp_numpy
from ibo_pymc.tasks.hotspot.model.lookup import lookup_numpy
from ibo_pymc.tasks.hotspot.model.round_loglik import pointwise_loglik


def theta_star(sd: SubjectData, family: str, param, tau_neg, tau_pos) -> np.ndarray:
    param = np.asarray(param, float)
    variant = get_variant(sd.model)
    if not variant.augmented:
        return lookup_numpy(sd.rt, family, param, np.zeros_like(param))
    neg = sd.neg
    ts_pos = lookup_numpy(sd.rt, family, param, tau_pos)
    if not variant.split_by_sign or not neg.any():
        return ts_pos
    ts_neg = lookup_numpy(sd.rt, family, param, tau_neg)
    return np.where(neg, ts_neg, ts_pos)


def loglik(sd: SubjectData, family: str, param, tau_neg, tau_pos, gamma, w, *, summed: bool = False) -> np.ndarray:
    """Pointwise log-likelihood, shape ``S + (rounds,)`` (``summed``: its sum over the rounds, shape ``S``), by the
    compiled per-draw loop
    (:func:`~ibo_pymc.tasks.hotspot.model.round_loglik.pointwise_loglik`: the lookup and density of
    :func:`theta_star` and :func:`~ibo_pymc.tasks.hotspot.kernel.logpdf`, a few times faster and without their
    draws x rounds temporaries)."""
    param, tau_neg, tau_pos, gamma, w = np.broadcast_arrays(
        *(np.asarray(a, float) for a in (param, tau_neg, tau_pos, gamma, w))
    )
    shape = param.shape
    flat = [a.reshape(-1) for a in (param, tau_neg, tau_pos, gamma, w)]
    out = pointwise_loglik(sd.rt, family, sd.theta2, sd.n_neg, *flat, summed=summed)
    return out.reshape(shape + out.shape[1:])


def loglik_numpy(sd: SubjectData, family: str, param, tau_neg, tau_pos, gamma, w, *, chunk: int = 2000) -> np.ndarray:
    """:func:`loglik` in NumPy (the reference the compiled loop is tested against), in chunks of draws."""
    param, tau_neg, tau_pos, gamma, w = np.broadcast_arrays(
        *(np.asarray(a, float) for a in (param, tau_neg, tau_pos, gamma, w))
    )
    shape = param.shape
    flat = [a.reshape(-1) for a in (param, tau_neg, tau_pos, gamma, w)]
    x = sd.theta2
    out = np.empty((flat[0].size, len(x)))
    for s in range(0, flat[0].size, chunk):
        p, tn, tp, g, ww = (a[s : s + chunk] for a in flat)
        ts = theta_star(sd, family, p, tn, tp)
        out[s : s + chunk] = wc_mixture_logp_numpy(x[None, :], ts, g[:, None], ww[:, None])
    return out.reshape(shape + (len(x),))


def heldout_loglik(idata, test, *, tables=None) -> np.ndarray:
    """log p(theta2_i | draw s) of held-out rounds at every posterior draw: shape (draws, rounds)."""
    from ibo_pymc.tasks.hotspot.forward.acquisition import get_family

    post = idata.posterior
    model = post.attrs["model"]
    sd = SubjectData.prepare(test, model, tables)
    flat = {v: post[v].values.reshape(-1) for v in post.data_vars if post[v].ndim == 2}
    fams = post["family_draw"].attrs["labels"].split(",")
    S = len(flat["gamma"])
    tn, tp = get_variant(model).tau_pair(flat)
    ll = np.empty((S, test.n_rounds))
    for k, f in enumerate(fams):
        m = flat["family_draw"] == k
        if m.any():
            ll[m] = loglik(sd, f, flat[get_family(f).var_name][m], tn[m], tp[m], flat["gamma"][m], flat["w"][m])
    # pointwise works in SubjectData's internal round order; back to the order of ``test``
    return sd.to_subject_order(ll)
