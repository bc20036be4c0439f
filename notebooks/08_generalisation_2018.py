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
# # 8. A third study: how far people generalise on a line and on a grid
#
# Wu, Schulz, Speekenbrink, Nelson & Meder (2018) is where the grid-search
# paradigm comes from. In **experiment 1** 81 people searched a line of 30
# options (16 rounds: 8 of 5 choices, 8 of 10); in **experiment 2** 80 people
# searched an 11 x 11 grid (8 rounds: 4 of 20 choices, 4 of 40). The rewards
# were drawn from a Gaussian process with an RBF kernel of length-scale 1
# (**rough** environments) or 2 (**smooth**). The paper compared 24 models --
# two surrogates (a GP, a Bayesian mean tracker that does not generalise) times
# six acquisition functions, each also in a *local* variant that prefers options
# near the last one -- and found that a GP with UCB describes people best, and
# that people generalise **less** than the environments allow: their fitted
# length-scale lambda lies below the true one.
#
# This notebook goes from the data to those findings with ibo-pymc: the same
# grid-search task as notebook 7 reads this study too (the data decide which),
# the published protocol is reproduced, and the Bayesian analysis runs through
# the same engine.

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
ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "models" / "gridsearch").is_dir())
RESULTS = ROOT / "models" / "gridsearch" / "wu2018"

# %% [markdown]
# ## The data
#
# `task.load(study="gridsearch2018")` reads both experiments' files (fetched
# from the authors' repository at pinned commits and checked against their
# SHA-256, or the `gridsearch2018/` folder in `IBO_DATA_DIR`) into one tidy
# table; `task.where(table, experiment=...)` picks one experiment (the
# participants are numbered apart in each), as `--experiment 1d|2d` does on the
# command line.

# %%
from ibo_pymc.tasks import get_task

task = get_task("gridsearch")
table = task.load(study="gridsearch2018")
people = table.groupby(["experiment", "subject"])[["environment", "payoff"]].first().reset_index()
pd.crosstab(people["experiment"], [people["environment"], people["payoff"]], margins=True)

# %% [markdown]
# One long round of one participant in each experiment: the order of the
# choices (numbers; the first option was revealed at random) and the rewards
# they revealed (colour).

# %%
from ibo_pymc.tasks.gridsearch.gridsearch2018 import grid_rounds

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [1.6, 1]})
gr = grid_rounds(table, 2, "1d")
r = int(np.argmax(gr.round_lengths))
n = gr.round_lengths[r]
axes[0].scatter(gr.choices[r, :n], np.arange(n) + 1, c=gr.z[r, :n], cmap="viridis", vmin=0, vmax=100, s=90,
                edgecolor="k")
axes[0].set(xlim=(-0.5, 29.5), xlabel="option on the line", ylabel="choice", title="experiment 1 (1d), participant 2")
gr = grid_rounds(table, 2, "2d")
r = int(np.argmax(gr.round_lengths))
n = gr.round_lengths[r]
x, y = gr.choices[r, :n] // 11, gr.choices[r, :n] % 11
sc = axes[1].scatter(x, y, c=gr.z[r, :n], cmap="viridis", vmin=0, vmax=100, s=70, edgecolor="k")
axes[1].set(xlim=(-0.5, 10.5), ylim=(-0.5, 10.5), aspect="equal", title="experiment 2 (2d), participant 2")
fig.colorbar(sc, ax=axes, label="reward")
plt.show()

# %% [markdown]
# ## The published analysis, reproduced
#
# The authors fitted each participant and model by maximum likelihood, leaving
# out each round in turn within its horizon, and scored the held-out rounds
# (pseudo-R2: 1 - nLL / (n ln K), 0 at chance). `ibo-reproduce --task
# gridsearch --experiment 1d|2d` runs that protocol for the 24 models. For one
# participant and two models:

# %%
from ibo_pymc.tasks.gridsearch.mle_tabulated import fit_participant

rows, folds = fit_participant(grid_rounds(table, 2, "1d"), "wu2018-1d", ["RBFUCB", "BMTUCB"])
pd.DataFrame(rows)[["participant", "model", "nLL", "R2", "lambda", "error_variance", "beta", "tau"]].round(4)

# %% [markdown]
# The whole reproduction is committed in `models/gridsearch/wu2018/EXPERIMENT/reproduction`.
# Its mean pseudo-R2 per model beside the authors' saved results (their
# `modelFit.csv`), with how many participants' held-out nLL is lower or higher
# than theirs (a different optimum of the same training rounds: ours is checked
# to be at least as good as theirs in every fold of the saved folds we hold):

# %%
published = pd.read_csv(RESULTS / "published.csv")
wide = published.pivot(index="model", columns="experiment", values=["R2", "R2_published"]).round(3)
wide.sort_values(("R2", "2d"), ascending=False) if ("R2", "2d") in wide else wide

# %% [markdown]
# A GP with UCB is the best of the 24 models in both experiments, as published:
# the plain one on the line, the local one on the grid. The few models whose
# mean differs from the authors' at 2 decimals are traced fold by fold in the
# validation pages. Where the authors' code and their saved results disagree
# (the grid's `RBFEXI` files are the local EI; the line's PMU is 1 for every
# option), the saved results win for this reproduction, and the Bayesian
# analysis below uses the corrected versions (the plain choice rule without
# clamps).
#
# ## Bayesian inverse BO of one participant
#
# `task.fit(rounds)` (or `ibo-sample --task gridsearch --experiment 1d
# --subject 2`) samples lambda, beta and tau for every acquisition family with
# NUTS and marginalises the family by its bridge-sampled evidence, exactly as
# for the 2020 study: the line is just another set of options with coordinates.

# %%
from ibo_pymc.tasks.gridsearch.model import family_probabilities, summary

settings = dict(draws=400, tune=300) if QUICK else {}
fit = task.fit(grid_rounds(table, 2, "1d"), **settings)
print(pd.Series(family_probabilities(fit)).round(3).to_string())
summary(fit).round(3)

# %% [markdown]
# ## The cohort: which model, and how far people generalise
#
# `ibo-cohort run --task gridsearch --experiment 1d --out
# models/gridsearch/wu2018/1d/cohort` fits every participant under both
# surrogates (the five default families), compares the surrogates and the
# families by random-effects Bayesian model selection over their evidences, and
# writes the generalisation tables from the GP fits. What is committed:

# %%
cohorts = {exp: RESULTS / exp / "cohort" for exp in ("1d", "2d") if (RESULTS / exp / "cohort").is_dir()}
print("committed cohorts:", ", ".join(cohorts) or "none yet (the commands above make them)")


def bms(folder):
    return pd.concat(
        {w: pd.read_csv(folder / f"bms_{w}.csv").set_index("model")[["expected_frequency", "exceedance_probability"]]
         for w in ("models", "families")}
    )


pd.concat({exp: bms(folder) for exp, folder in cohorts.items()}, axis=1).round(3) if cohorts else None

# %% [markdown]
# The generalisation table: per environment class, the cohort's median lambda
# with a 95% interval that carries both the sampling of participants and each
# participant's posterior uncertainty, the share of resampled cohort medians
# below the true length-scale, and how many participants' own 95% HDI lies
# wholly below (or above) it. `generalisation_table` computes it from any set of
# GP fits; here from the participant fitted above alone, as an example of the
# call, then the committed cohorts':

# %%
from ibo_pymc.tasks.gridsearch.generalisation import generalisation_table

environments = table[table["experiment"] == "1d"].groupby("subject")["environment"].first().to_dict()
print(generalisation_table({2: fit.posterior["lambda"].values.ravel()}, environments, experiment="1d").round(3))
gen = [pd.read_csv(folder / "generalisation.csv") for folder in cohorts.values()]
pd.concat(gen).round(3) if gen else None

# %%
lam = [pd.read_csv(folder / "generalisation_participants.csv") for folder in cohorts.values()]
if lam:
    lam = pd.concat(lam)
    fig, axes = plt.subplots(1, len(cohorts), figsize=(6 * len(cohorts), 3.6), squeeze=False)
    for ax, (exp, d) in zip(axes[0], lam.groupby("experiment")):
        d = d.sort_values(["environment", "lambda_median"]).reset_index(drop=True)
        for env, col in (("rough", "C3"), ("smooth", "C0")):
            e = d[d["environment"] == env]
            ax.vlines(e.index, e["lambda_lo"], e["lambda_hi"], color=col, alpha=0.4)
            ax.plot(e.index, e["lambda_median"], ".", color=col, label=env)
            ax.hlines(e["true_lambda"].iloc[0], e.index.min(), e.index.max(), color=col, ls="--", lw=1)
        ax.set(yscale="log", xticks=[], xlabel="participant (sorted)", ylabel="lambda", title=f"experiment {exp}")
        ax.legend()
    plt.tight_layout()
    plt.show()

# %% [markdown]
# In both experiments the cohort's model selection picks the GP and UCB, as the
# paper does, and lambda lies below the environments' length-scale in both
# classes. On the line it is about as low in the smooth environments as in the
# rough ones; on the grid a little higher in the smooth ones, and far below
# their true 2: people generalise less than the environments allow, and the gap
# is wider where generalising would pay more. The validation pages give the
# numbers with the convergence tables
# (`models/gridsearch/wu2018/EXPERIMENT/bayes/summary.csv`), say why many of the
# line's fits report divergent transitions (UCB with tau near 0: a choice rule
# that is nearly an argmax), and how the grid's hardest fits met the
# convergence targets (a family with two separated modes is split into strata).
