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
# # 2. The forward model: Bayesian optimisation of move 2
#
# To invert a strategy we first need the forward direction: given a strategy,
# where would a player click on move 2? The package follows the paper:
#
# 1. **Surrogate.** After move 1 the player believes the score is a plane,
#    `f(m) = m' beta + noise`, with a Gaussian prior on `beta`. Two observations
#    (the start and move 1) give a Gaussian posterior and a predictive mean and
#    sd at every candidate move 2.
# 2. **Acquisition function.** A strategy scores candidates by their predictive
#    distribution: probability of improvement PI(xi), expected improvement
#    EI(xi) or an upper confidence bound UCB(p). Larger xi or p favour
#    uncertain (sideways) candidates: more exploration.
# 3. **Argmax curve.** The best candidate on the click circle around move 1 is
#    at an angle `theta*(delta_r1)`. The method compares each player's turns
#    with these curves.

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
from ibo_pymc.tasks.hotspot import plots
from ibo_pymc.tasks.hotspot.forward import Surrogate, argmax_curve, load_tables

s = Surrogate()
theta = np.linspace(-np.pi, np.pi, 9)
mu, sd = s.predict(theta, 10.0)      # predictive mean and sd on the click circle after delta_r1 = 10
pd.DataFrame({"theta": theta, "mean": mu, "sd": sd}).round(3)

# %% [markdown]
# Straight ahead (`theta = 0`) the mean is highest and the sd lowest; sideways
# the sd grows. Each acquisition family trades these off differently. The
# figure shows UCB(0.8) over the click region around move 1; the white dots are
# its argmax on the boundary (mirrored, because everything is symmetric in
# theta).

# %%
fig = plots.plot_click_region_surface("UCB", 0.8, 5.0)
plt.show()

# %% [markdown]
# ## Acquisition values over (delta_r1, theta) and the argmax curve
#
# For every `delta_r1` the argmax angle traces a curve. Pure exploitation
# (PI with xi = 0, or UCB with p = 0.5, which are the same curve) goes straight
# on after a gain and turns back after a loss; exploration bends the curve
# sideways.

# %%
fig = plots.plot_acquisition_curves("EI", [0, 5, 15, 30])
plt.show()
d = np.linspace(-30, 30, 7)
print("PI(0) == UCB(0.5):", np.allclose(argmax_curve("PI", 0.0, d), argmax_curve("UCB", 0.5, d)))

# %% [markdown]
# ## The augmentation tau
#
# Real players explore more than any of these curves allow. The augmented
# functions of the paper (ũ) forbid angles that are not exploratory enough:
# with threshold `tau`, after a gain the turn must exceed `tau`, after a loss it
# must stay below `pi - tau`. ũ± uses separate thresholds `tau^-` (after a loss)
# and `tau^+` (after a gain). The dashed line below is the plain curve, the
# solid one the augmented curve.

# %%
fig = plots.plot_acquisition_surface("PI", 10.0, tau=0.6)
plt.show()

# %% [markdown]
# ## Argmax tables
#
# Fitting needs `theta*` at every observed `delta_r1` for every candidate
# strategy, thousands of times. The package computes the curves once on a grid
# (family x parameter x tau x delta_r1), caches them per user, and interpolates.
# The tables are an `xarray.DataArray` with named dims:

# %%
tables = load_tables()
print(tables.data.dims, tables.data.shape)
tables.theta_star("UCB", 0.8, [-10.0, 5.0], tau=0.3)
