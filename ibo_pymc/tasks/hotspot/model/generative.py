"""The generative PyMC model of one subject (docs: explanation/model).

::

    family            ~ Categorical(1/F, ..., 1/F)          over the families (PI, EI, UCB)
    xi_pi, xi_ei, ... ~ Uniform(family's bounds)            one shape parameter per family
    gamma, w, tau...  ~ Uniform (docs: explanation/model)
    theta*_i          = lookup(family, its parameter, tau_i; delta_r1_i)
    theta2_i          ~ w WC(theta*_i, gamma) + (1 - w) WC(-theta*_i, gamma)   (CustomDist)

with ``tau_i`` = 0 (u), tau (ũ), or tau^- / tau^+ by the sign of delta_r1 (ũ±).
``theta2`` is an observed :func:`~ibo_pymc.tasks.hotspot.model.likelihood.WrappedCauchyMixture`,
so ``pm.sample_prior_predictive`` and ``pm.sample_posterior_predictive`` draw
from the model itself. With ``marginalized=True`` the family is summed out by
:func:`pymc_extras.marginalize` (its log-density is then the paper's
``logsumexp_k(log 1/F + sum_i log p(theta2_i | k, params))``, equal to
:func:`~ibo_pymc.tasks.hotspot.model.builder.build_model`'s, tested), and
:func:`pymc_extras.recover_marginals` gives per-draw family probabilities.

The model is fitted by :class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel` (conditional fits
per family, bridge-sampled evidences, strata), which converges where NUTS on
the marginal model does not; this module is the model's definition, used to
validate that method and to draw predictions:
:func:`posterior_predictive` draws theta2 for a fit's posterior draws with
``pm.sample_posterior_predictive`` on this model, :func:`family_probabilities`
recovers each draw's family probabilities with ``pymc_extras.recover_marginals``
(equal to the fit's ``family_prob``, tested), and :func:`prior_predictive_draw`
draws a truth and its data from the model (what simulation-based calibration,
:mod:`ibo_pymc.tasks.hotspot.simulate.sbc`, is built on).
"""

from __future__ import annotations

import warnings

import numpy as np

from ibo_pymc.engine.samplers import pymc_log_level
from ibo_pymc.tasks.hotspot.model.builder import SubjectData
from ibo_pymc.tasks.hotspot.model.likelihood import WrappedCauchyMixture
from ibo_pymc.tasks.hotspot.model.lookup import lookup_pytensor


def generative_model(obs, model: str = "tau_pm", *, tables=None, marginalized: bool = True):
    """The generative model of a subject's rounds (module docstring).

    ``obs`` is a :class:`~ibo_pymc.tasks.hotspot.data.rounds.SubjectObservations` (or a prepared
    :class:`SubjectData`); ``marginalized=False`` keeps ``family`` as a
    Categorical variable (for prior and posterior predictive draws).
    """
    import pymc as pm
    import pytensor.tensor as pt

    sd = obs if isinstance(obs, SubjectData) else SubjectData.prepare(obs, model, tables)
    model = sd.model
    fams = sd.families
    rt = sd.rt
    T = sd.to_subject_order(sd.rt.values)  # (family, param, tau, round)
    d = np.asarray(sd.obs.delta_r1, float)
    coords = {"family": list(fams), "round": np.asarray(sd.obs.session_id)}
    with pm.Model(coords=coords) as m:
        spec = sd.spec
        family = pm.Categorical("family", p=np.full(len(fams), 1.0 / len(fams)))
        params = [spec.prior(n).pymc(n) for n in spec.shape_parameters]
        gamma = spec.prior("gamma").pymc("gamma")
        w = spec.prior("w").pymc("w")
        variant = spec.variant
        taus = {n: spec.prior(n).pymc(n) for n in variant.taus}
        tau_neg, tau_pos = variant.tau_pair(taus) if variant.augmented else (pt.constant(0.0), pt.constant(0.0))
        neg = pt.constant(d < 0)
        curves = []
        for k, p in enumerate(params):
            Tk = pt.constant(T[k])
            kw = {
                "param_lo": float(rt.param_lo[k]),
                "param_step": float(rt.param_step[k]),
                "tau_step": float(rt.tau_step),
            }
            pos = lookup_pytensor(Tk, p, tau_pos, **kw)
            curves.append(
                pos if not variant.split_by_sign else pt.switch(neg, lookup_pytensor(Tk, p, tau_neg, **kw), pos)
            )
        theta_star = pt.stack(curves)[family]  # no Deterministic: marginalize refuses dependents of the family
        WrappedCauchyMixture("theta2", theta_star, gamma, w, observed=np.asarray(sd.obs.theta2, float), dims="round")
    if marginalized:
        from pymc_extras import marginalize

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*experimental", category=UserWarning)
            m = marginalize(m, ["family"])
    return m


def prior_predictive_draw(obs, model: str = "tau_pm", *, tables=None, random_seed=None) -> tuple[dict, np.ndarray]:
    """One draw of every parameter and of ``theta2`` from the generative model, at ``obs``'s delta_r1.

    ``pm.sample_prior_predictive`` on the unmarginalised model; ``obs.theta2``
    is ignored. Returns ``(truth, theta2)``: ``truth`` maps ``"family"`` to the
    drawn family's name and every continuous parameter to its value.
    """
    import logging

    import pymc as pm

    m = generative_model(obs, model, tables=tables, marginalized=False)
    families = m.coords["family"]
    with pymc_log_level(logging.WARNING), m:  # the "Sampling: [...]" notice, once per draw
        prior = pm.sample_prior_predictive(1, random_seed=random_seed, compile_kwargs={"mode": "FAST_COMPILE"})
    truth = {"family": families[int(prior.prior["family"].values.ravel()[0])]}
    for v in m.free_RVs:
        if v.name != "family":
            truth[v.name] = float(prior.prior[v.name].values.ravel()[0])
    return truth, np.asarray(prior.prior_predictive["theta2"].values.reshape(-1), float)


def _observations(idata):
    """A fit's rounds (constant and observed data) as :class:`SubjectObservations`."""
    from ibo_pymc.tasks.hotspot.data.rounds import SubjectObservations

    post = idata.posterior
    const = idata.constant_data
    return SubjectObservations(
        subject=int(post.attrs["subject"]),
        user_id=int(post.attrs.get("user_id", post.attrs["subject"])),
        session_id=np.asarray(const["round"].values),
        round_index=np.asarray(const["round_index"].values),
        delta_r1=np.asarray(const["delta_r1"].values, float),
        theta2=np.asarray(idata.observed_data["theta2"].values, float),
    )


def family_probabilities(idata, *, tables=None):
    """Per-draw ``P(family | params, theta2)`` at a fit's posterior draws, by ``pymc_extras.recover_marginals``
    on the marginalised generative model: an ``xarray.DataArray`` (chain, draw, family), equal to the
    fit's Rao-Blackwellised ``family_prob``."""
    import arviz as az
    from pymc_extras import recover_marginals

    m = generative_model(_observations(idata), idata.posterior.attrs["model"], tables=tables)
    free = [v.name for v in m.free_RVs]
    out = recover_marginals(
        az.InferenceData(posterior=idata.posterior[free]), model=m, return_samples=False, extend_inferencedata=False
    )
    lp = out["lp_family"]
    fams = m.coords["family"]
    return np.exp(lp.rename({lp.dims[-1]: "family"}).assign_coords(family=list(fams))).rename("family_prob")


def posterior_predictive(idata, *, tables=None, random_seed=None):
    """theta2 drawn by ``pm.sample_posterior_predictive`` on the generative model, at a fit's posterior draws.

    ``idata`` is a fit's InferenceData (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`);
    each draw's family is its ``family_draw``. Returns an ``xarray.DataArray``
    (chain, draw, round).
    """
    import arviz as az
    import pymc as pm

    post = idata.posterior
    m = generative_model(_observations(idata), post.attrs["model"], tables=tables, marginalized=False)
    free = [v.name for v in m.free_RVs if v.name != "family"]
    trace = post[free].assign(family=post["family_draw"])
    with m:
        pp = pm.sample_posterior_predictive(
            az.InferenceData(posterior=trace), var_names=["theta2"], random_seed=random_seed, progressbar=False
        )
    return pp.posterior_predictive["theta2"]
