# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3. Fitting subject 28: from data to an interpreted strategy
#
# We now infer subject 28's strategy with the PyMC model (ũ±, the paper's best
# model). Its unknowns are:
#
# * the **family** k (PI, EI or UCB, prior 1/3 each) and its shape parameter
#   (xi for PI and EI, p for UCB);
# * **tau^-** and **tau^+**, the exploration thresholds after a loss and after a gain;
# * **gamma**, the spread of the turns around the argmax (wrapped Cauchy);
# * **w**, the share of turns to the right (+theta*) rather than the left.
#
# The family is discrete, so it is **marginalised**: the likelihood sums over
# the three families. `IBOModel.fit()` samples each family's conditional
# posterior with NUTS, weighs them by their marginal likelihoods (bridge
# sampling) and returns an `arviz.InferenceData` of the marginalised posterior
# (its `component_evidence` group holds each family's log marginal likelihood
# and posterior probability). (Why not sample the marginalised model directly? PI with xi near 0 and UCB
# with p near 0.5 are the same curve, so joint chains get stuck in different
# families; see `ibo_pymc/tasks/hotspot/model/fit.py`.)

# %%
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
QUICK = os.environ.get("IBO_QUICK") == "1"  # short sampling runs (CI); unset for full ones
pd.set_option("display.width", 120)

# %%
import arviz as az

from ibo_pymc.tasks.hotspot.data import load_hotspot
from ibo_pymc.tasks.hotspot.model import IBOModel

obs = load_hotspot().observations(28)
m = IBOModel(obs, model="tau_pm", draws=300 if QUICK else 1000, tune=300 if QUICK else 500, seed=1)
m.build()   # the PyMC model of the paper (family marginalised)

# %%
idata = m.fit(progress=False)
idata

# %% [markdown]
# ## Which strategy?
#
# The posterior family probabilities, then each family's parameters given that
# family, with 95% HDIs. A family with probability near 0 can be ignored.

# %%
m.family_probabilities()

# %%
summ = m.summary()
summ[summ["probability"] > 0.01].round(3)

# %% [markdown]
# ## Did the sampler work?
#
# R-hat near 1 and large effective sample sizes (ESS) for every quantity that
# carries posterior mass; no divergences. `diagnostics()` covers the
# marginalised posterior and each family's conditional chains.

# %%
diag = m.diagnostics()
print("divergences:", diag.attrs["divergences"], "of", diag.attrs["draws"], "draws")
diag[diag["required"]].round(3)

# %%
az.plot_trace(idata.conditional_posterior, var_names=["p_ucb", "gamma", "tau_neg", "tau_pos"],
              coords={"component": ["UCB"]}, compact=True)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## The strategy as a picture
#
# The credible band is where the posterior puts the acquisition curve
# `+-theta*(delta_r1)` (95% HDI at each `delta_r1`); the grey prediction region
# is where 95% of new move-2 turns should fall. Because turns are angles and go
# both left and right, this region is circular and often two or more arcs; it
# can wrap through +-pi.

# %%
from ibo_pymc.tasks.hotspot.fit_plots import plot_fit
from ibo_pymc.tasks.hotspot.regions import regions

reg = regions(idata, n_draws=400 if QUICK else 1000)
fig = plot_fit(idata, reg)
plt.show()
print("prediction arcs at delta_r1 = -20:", [tuple(round(v, 2) for v in a) for a in reg.prediction[int(np.argmin(abs(reg.delta_r1 + 20)))]])

# %% [markdown]
# **Reading it.** Subject 28 behaves like UCB with p close to 0.5 (PI with xi
# near 0 is the same curve, hence the split between those two families): pure
# exploitation by the curve, but with large thresholds. After a loss
# (`tau^-` high) the turn is pushed well away from straight back; after a gain
# (`tau^+`) the turn is pushed away from straight on. So this player explores
# far more than any plain acquisition curve allows, and mostly to the right
# (w > 0.5).
#
# ## Save and reload
#
# The NetCDF file holds the draws and the full configuration; `IBOModel.load`
# rebuilds the model from it.

# %%
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as tmp:
    path = m.save(Path(tmp) / "subject-28.nc")
    again = IBOModel.load(path)
    print(again.config.model, again.obs.n_rounds, "rounds;",
          "same draws:", np.array_equal(again.idata.posterior["gamma"], idata.posterior["gamma"]))
    print(again.build().str_repr())
