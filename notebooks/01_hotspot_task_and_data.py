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
# # 1. The hotspot task and its data
#
# In the **hotspot task** a player looks for an invisible hotspot in a disc of
# radius 450 px. Every round starts at the centre (move 0); each click must lie
# within 20 px of the previous one, and its score rises linearly as the click
# gets closer to the hotspot: `r_t = r_0 + k (d_0 - d_t)`, with a steepness `k`
# drawn per round. A round has 3 to 10 moves, which the player does not know.
#
# After move 1 the player has seen one score change, `delta_r1`. Move 2 is where
# the strategy shows: turning towards where the score seems to rise is
# **exploitation**; turning sideways, to learn about the other direction of the
# plane, is **exploration**. Inverse Bayesian optimisation reads a player's
# strategy off the angle of move 2, `theta2`, as a function of `delta_r1`.
#
# This notebook loads the study's raw logs, applies the paper's exclusions and
# shows each player's `(delta_r1, theta2)` pairs, the data every model in this
# package is fitted to.

# %%
import os
import warnings

import matplotlib.pyplot as plt
import pandas as pd

warnings.filterwarnings("ignore")
QUICK = os.environ.get("IBO_QUICK") == "1"  # short sampling runs (CI); unset for full ones
pd.set_option("display.width", 120)

# %%
from ibo_pymc.tasks.hotspot.data import load_hotspot, read_raw_logs, resolve_data_dir

folder = resolve_data_dir()        # $IBO_DATA_DIR, or the per-user cache (fetched and hash-checked once)
raw = read_raw_logs(folder)        # validated logs: one row per click, one per round
raw.events.head()

# %% [markdown]
# Each click row holds the session (round), the move number (1 is the start),
# the position on screen (y grows downwards), the score and the hidden hotspot.
# `load_hotspot` derives per-move and per-round quantities from these logs and
# applies the two exclusions of the paper: the first 20 rounds of every player
# (burn-in), and every round whose hotspot was reachable within the round's
# moves (there the linear picture of the score breaks down).

# %%
data = load_hotspot(folder)
excl = data.exclusion_counts()
print(f"{len(data.subjects)} players, {int(excl['logged'].sum())} rounds logged, "
      f"{int(excl['burn_in'].sum())} burn-in, {int(excl['reachable'].sum())} reachable, "
      f"{int(excl['eligible'].sum())} eligible")
excl.head()

# %% [markdown]
# ## One round
#
# The path of one round of player 28: the start, move 1 in some direction, then
# the turn at move 2 that the method models. `theta2` is the angle of move 2
# relative to the direction of move 1, wrapped to (-pi, pi]; positive is a
# clockwise (rightward) turn on screen.

# %%
r = data.eligible[data.eligible["subject"] == 28].iloc[3]
mv = data.moves[data.moves["session_id"] == r["session_id"]]
fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.plot(mv["x"], mv["y"], "o-", color="k", ms=4)
for _, m in mv.iterrows():
    ax.annotate(int(m["move"]), (m["x"], m["y"]), textcoords="offset points", xytext=(5, 5))
ax.invert_yaxis()
ax.set_aspect("equal")
ax.set_title(f"round {int(r['session_id'])}: delta_r1 = {r['delta_r1']:.1f}, theta2 = {r['theta2']:.2f} rad")
plt.show()

# %% [markdown]
# ## The move-2 view of three players
#
# Each point is one eligible round. Where the first move raised the score
# (`delta_r1 > 0`) most players keep going straight or nearly so (`theta2` near
# 0); where it lowered the score they turn around (`theta2` near +-pi). How
# sharply they switch, and how far sideways they turn, differs between players:
# that is the strategy the models estimate.

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=True)
for ax, s in zip(axes, (21, 24, 28)):
    obs = data.observations(s)
    ax.scatter(obs.delta_r1, obs.theta2, s=5, color="k", alpha=0.6)
    ax.set_title(f"subject {s}: {obs.n_rounds} rounds")
    ax.set_xlabel("delta_r1")
axes[0].set_ylabel("theta2 (rad)")
plt.show()

# %%
# the same data as an xarray Dataset (dims: round), ready for ArviZ's constant/observed data
data.observations(28).to_xarray()
