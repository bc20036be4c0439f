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
# # 6. The population: which strategy do people use?
#
# Notebooks 3 and 4 fit one player at a time. The questions a study asks are
# about the population: *is ũ± the better model for the group, or just for a
# few players with many rounds? What fraction of people search like UCB?*
#
# Adding up log-likelihoods or log evidences over players answers a different
# question: it assumes **every** player uses the same model (a fixed effect),
# so one player with decisive data can outvote everyone else. The standard
# answer in cognitive modelling is **random-effects Bayesian model selection**
# (Stephan et al. 2009): each player uses one model, drawn with unknown
# population frequencies r ~ Dirichlet(alpha). From every player's log model
# evidence it infers
#
# * the **expected frequency** of each model in the population, with a credible interval;
# * the **exceedance probability** xp: the probability that a model is the most frequent;
# * the **Bayesian omnibus risk** (BOR, Rigoux et al. 2014): the probability that the
#   frequencies do not differ at all, and the **protected exceedance probability**
#   pxp = (1 - BOR) xp + BOR / K, which does not overstate a winner when the data cannot tell the models apart.
#
# Families of models (Penny et al. 2010) ask the same about any UCB vs any PI vs any EI,
# whatever the augmentation.

# %%
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
QUICK = os.environ.get("IBO_QUICK") == "1"  # short sampling runs (CI); unset for full ones
pd.set_option("display.width", 120)
ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "models" / "cohort").is_dir())

# %% [markdown]
# ## Where a player's log evidence comes from
#
# Every fit computes the marginal likelihood of each acquisition family,
# p(theta2 | model, family), by bridge sampling its conditional posterior (that
# is how it gets the posterior family probabilities). The model's evidence
# marginalises the family with the uniform prior, and is stored with its
# Monte-Carlo standard error in the fit's attributes. Here is player 28 under ũ±:

# %%
from ibo_pymc.population.evidence import fit_evidence
from ibo_pymc.tasks.hotspot.data import load_hotspot
from ibo_pymc.tasks.hotspot.model import IBOModel
from ibo_pymc.tasks.hotspot.population.fine_grid_evidence import grid_evidence

data = load_hotspot()
obs = data.observations(28)
fit = IBOModel(obs, model="tau_pm", draws=300 if QUICK else 1000, tune=300 if QUICK else 500, seed=1)
idata = fit.fit(progress=False)
print("log p(theta2 | ũ±) =", round(idata.posterior.attrs["log_evidence"], 3),
      "+-", round(idata.posterior.attrs["log_evidence_error"], 3))
fit_evidence(idata)

# %% [markdown]
# An independent check: the same integral by quadrature over a refined grid
# (the fine grid that validates the fits; no sampling). They agree to a few
# hundredths of a nat, which is the size of the quadrature's own error at this
# resolution (with 1.5 times the points per dimension it moves by 0.01-0.02
# towards the bridge value); the validation further down runs both paths at
# full resolution on simulated players:

# %%
coarse = {"points": {"param": 20, "tau": 14, "gamma": 16, "w": 16}} if QUICK else {}  # CI: a quick, coarser grid
grid = grid_evidence(obs, "tau_pm", refine=None, **coarse)
pd.DataFrame({"bridge": fit_evidence(idata).set_index("family")["log_evidence"],
              "fine grid": grid.set_index("family")["log_evidence"]}).round(3)

# %% [markdown]
# ## The study's evidences
#
# `ibo-cohort run` fits every player under u, ũ and ũ± (reusing saved fits)
# and writes the evidences and the comparisons. Its output for the 28 players
# is committed in `models/cohort/`:
#
#     ibo-cohort run --data hotspot_raw --out models/cohort --fits FOLDER
#
# One row per player and model (`all`: the family marginalised) or model and family:

# %%
from ibo_pymc.population.evidence import lme_table

evidence = pd.read_csv(ROOT / "models" / "cohort" / "log_evidence.csv")
lme = lme_table(evidence, "model")
lme.head()

# %% [markdown]
# The fixed-effects view: the summed log evidence says ũ± by a wide margin, and
# so does the count of players for whom each model is best. But the count hides
# how sure each player's evidence is, and the sum lets a few decisive players dominate:

# %%
best = lme.idxmax(axis=1).value_counts().reindex(lme.columns, fill_value=0)
fixed = pd.DataFrame({"summed log evidence": lme.sum() - lme.sum().max(), "players best fitted": best})
fixed

# %% [markdown]
# ## Random-effects BMS of the three models

# %%
from ibo_pymc.population import random_effects_bms

bms = random_effects_bms(lme)
print(f"Bayesian omnibus risk {bms.bor:.2g}")
bms.table().join(bms.frequency_interval()).round(3)

# %% [markdown]
# ũ± is the most frequent model in the population with protected exceedance
# probability near 1, and the omnibus risk says the frequencies do differ. u
# keeps a real share (about a quarter of the players), and ũ, the one-threshold
# model, almost none: players who need a threshold at all need two.
#
# Each player's posterior model probability (`bms.posterior`) shows who they are:

# %%
post = bms.posterior.rename(columns={"u": "u", "tau": "ũ", "tau_pm": "ũ±"})
n_rounds = pd.Series({s: data.observations(s).n_rounds for s in data.subjects}, name="rounds")
fig, ax = plt.subplots(figsize=(11, 2.4))
im = ax.imshow(post.T.to_numpy(), aspect="auto", cmap="Greys", vmin=0, vmax=1)
ax.set_yticks(range(3), post.columns)
ax.set_xticks(range(len(post)), [f"{s}\n{n_rounds[s]}" for s in post.index], fontsize=7)
ax.set_xlabel("player (rounds)")
fig.colorbar(im, ax=ax, label="P(model | player)")
plt.show()

# %%
by_model = post.idxmax(axis=1)
pd.DataFrame({"players": by_model.value_counts(), "median rounds": n_rounds.groupby(by_model).median()})

# %% [markdown]
# The players best described by u do not have fewer rounds than the others
# (the median is even higher): their moves simply show no threshold behaviour,
# so ũ±'s two extra parameters buy no fit and cost evidence (the Occam factor).
# Summing log evidences over players hides them; random effects count them as
# a real part of the population (about a quarter).
#
# ## Families: any UCB vs any PI vs any EI
#
# The nine (model, family) pairs, partitioned by acquisition family. Each family
# gets one prior count, spread over its three models (Penny et al. 2010):

# %%
from ibo_pymc.population import family_bms
from ibo_pymc.population.evidence import partition_by

pairs = lme_table(evidence, "family")
fam = family_bms(pairs, partition_by(pairs.columns, "family"))
print(f"Bayesian omnibus risk {fam.bor:.2g}")
fam.table().join(fam.frequency_interval()).round(3)

# %% [markdown]
# UCB-like search is the majority strategy (about three players in four), PI a
# minority, EI almost absent. The figure that `ibo-cohort run` commits shows the
# three comparisons together:

# %%
from ibo_pymc.population.selection import cohort_bms, figure
from ibo_pymc.tasks.hotspot.population.workflow import variant_labels

result = cohort_bms(evidence)
figure(result, variant_labels(result.models.names))
plt.show()

# %% [markdown]
# ## How robust is this?
#
# Two checks. First, the evidences themselves: on simulated players the bridge
# estimates agree with the quadrature within their errors, and refitting the 28
# players with another seed moves them by about their reported standard errors
# (`benchmarks/validate_evidence.py`, committed as `models/cohort/evidence_validation.csv`;
# z is the difference over the two errors combined, so it should look like N(0, 1)).
# The seed comparison is centred a little above 0: a fit's random streams come
# from its seed alone, so the fits of different players with the same seed share
# them and their Monte-Carlo errors are correlated across players.

# %%
val = pd.read_csv(ROOT / "models" / "cohort" / "evidence_validation.csv")
val.groupby("check")["z"].describe(percentiles=[0.5, 0.95]).round(2)

# %%
fig, ax = plt.subplots(figsize=(5, 3))
for check, d in val.groupby("check"):
    ax.hist(d["z"].clip(-5, 5), bins=np.linspace(-5, 5, 41), alpha=0.6, label=check, density=True)
z = np.linspace(-5, 5, 200)
ax.plot(z, np.exp(-z**2 / 2) / np.sqrt(2 * np.pi), "k-", lw=1, label="N(0, 1)")
ax.set_xlabel("difference / standard error")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# Second, no single player decides the answer: dropping each player in turn
# moves the expected frequency of ũ± by at most a few points.

# %%
loo = pd.DataFrame([random_effects_bms(lme.drop(index=s)).table()["expected_frequency"].rename(s) for s in lme.index])
loo.describe().loc[["min", "max"]].round(3)

# %% [markdown]
# ## Partial pooling: how exploratory is the typical person?
#
# Model selection says *which* model; the hierarchical model says *how much*:
# every player's gamma, w, tau^-, tau^+ and shape parameter come from a
# population distribution, and every player's family from a population mix, so
# players with few or ambiguous rounds borrow strength from the others. The
# switch is the one users of HSSM or hBayesDM expect (here on three players; two in
# the quick run the tests make). A subject whose importance weights PSIS calls
# unreliable is normally refined by fresh draws near the population and the
# population fitted again (`refine=True`, the default; see the explanation page
# on the hierarchical model); on three players, whose population is barely
# identified, that takes many population fits, so this demonstration turns it off
# and says instead whose numbers are not yet to be trusted:

# %%
from ibo_pymc.tasks.hotspot.model import IBOModel

few = [data.observations(s) for s in ((26, 28) if QUICK else (26, 27, 28))]
short = (dict(draws=300, tune=300, population_draws=300, population_tune=300, population_chains=2) if QUICK
         else dict(population_draws=2000))
h = IBOModel(few, hierarchical=True, seed=1, refine=False, **short)
h.fit()
h.population().query("quantity in ['family_frequency', 'median']").round(3)

# %%
h.idata["subject_diagnostics"].to_dataframe()[["pareto_k", "pareto_k_max", "reliable"]].round(2)

# %% [markdown]
# Three players barely tell the population's family mix apart (wide intervals).
# On all 28 players (`ibo-cohort hierarchical`, committed in `models/hierarchical/`):
# the population mix of families, the typical player's parameters (population
# medians) and how much players differ (sigma, on the logit scale):

# %%
pop = pd.read_csv(ROOT / "models" / "hierarchical" / "population.csv")
pop.round(3)

# %% [markdown]
# Shrinkage: each player's posterior mean alone and under the population.
# Players whose own data pin a parameter down keep it; the others move towards
# the population median (dashed):

# %%
from ibo_pymc.population.plots import plot_shrinkage

shrink = pd.read_csv(ROOT / "models" / "hierarchical" / "subjects.csv")
plot_shrinkage(shrink, pop, labels={"tau_neg": "tau^-", "tau_pos": "tau^+"})
plt.show()

# %% [markdown]
# Does pooling predict better? The paper's held-out protocol: fit the training
# rounds (each player alone, and hierarchically), score the test rounds:

# %%
held = pd.read_csv(ROOT / "models" / "hierarchical" / "heldout.csv")
print(f"held-out lppd: alone {held['independent'].sum():.1f}, hierarchical {held['hierarchical'].sum():.1f}; "
      f"hierarchical better for {(held['difference'] > 0).sum()} of {len(held)} players")
held.round(2).head(10)

# %% [markdown]
# ## From the command line
#
# Any table of log evidences (a header of model names, one row per subject),
# from this package or any other, goes through the same function:
#
#     ibo-cohort bms --lme models/cohort/lme_models.csv --csv bms.csv
#
# prints the table and the BOR, writes `bms.csv`
# (`model,alpha,expected_frequency,exceedance_probability,protected_exceedance_probability`)
# and the BOR with the free energies to `bms.json`. `--families 'A=m1,m2;B=m3'` compares families.
