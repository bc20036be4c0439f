"""Write (and execute) the teaching notebooks: ``python notebooks/build.py [--execute]``.

The notebooks' text and code live here so that they are reviewed like code;
``--execute`` runs each one top to bottom with nbclient and stores the outputs
(figures included) in the committed ``.ipynb``. Set ``IBO_QUICK=1`` for short
sampling runs (what CI does); the data come from ``IBO_DATA_DIR`` or the
per-user cache, as everywhere in the package.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = """\
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
QUICK = os.environ.get("IBO_QUICK") == "1"  # short sampling runs (CI); unset for full ones
pd.set_option("display.width", 120)
"""

NB = {}

NB["01_hotspot_task_and_data"] = [
    ("md", """\
# 1. The hotspot task and its data

In the **hotspot task** a player looks for an invisible hotspot in a disc of
radius 450 px. Every round starts at the centre (move 0); each click must lie
within 20 px of the previous one, and its score rises linearly as the click
gets closer to the hotspot: `r_t = r_0 + k (d_0 - d_t)`, with a steepness `k`
drawn per round. A round has 3 to 10 moves, which the player does not know.

After move 1 the player has seen one score change, `delta_r1`. Move 2 is where
the strategy shows: turning towards where the score seems to rise is
**exploitation**; turning sideways, to learn about the other direction of the
plane, is **exploration**. Inverse Bayesian optimisation reads a player's
strategy off the angle of move 2, `theta2`, as a function of `delta_r1`.

This notebook loads the study's raw logs, applies the paper's exclusions and
shows each player's `(delta_r1, theta2)` pairs, the data every model in this
package is fitted to."""),
    ("code", SETUP),
    ("code", """\
from ibo_pymc.data import load_hotspot, read_raw_logs, resolve_data_dir

folder = resolve_data_dir()        # $IBO_DATA_DIR, or the per-user cache (fetched and hash-checked once)
raw = read_raw_logs(folder)        # validated logs: one row per click, one per round
raw.events.head()"""),
    ("md", """\
Each click row holds the session (round), the move number (1 is the start),
the position on screen (y grows downwards), the score and the hidden hotspot.
`load_hotspot` derives per-move and per-round quantities from these logs and
applies the two exclusions of the paper: the first 20 rounds of every player
(burn-in), and every round whose hotspot was reachable within the round's
moves (there the linear picture of the score breaks down)."""),
    ("code", """\
data = load_hotspot(folder)
excl = data.exclusion_counts()
print(f"{len(data.subjects)} players, {int(excl['logged'].sum())} rounds logged, "
      f"{int(excl['burn_in'].sum())} burn-in, {int(excl['reachable'].sum())} reachable, "
      f"{int(excl['eligible'].sum())} eligible")
excl.head()"""),
    ("md", """\
## One round

The path of one round of player 28: the start, move 1 in some direction, then
the turn at move 2 that the method models. `theta2` is the angle of move 2
relative to the direction of move 1, wrapped to (-pi, pi]; positive is a
clockwise (rightward) turn on screen."""),
    ("code", """\
r = data.eligible[data.eligible["subject"] == 28].iloc[3]
mv = data.moves[data.moves["session_id"] == r["session_id"]]
fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.plot(mv["x"], mv["y"], "o-", color="k", ms=4)
for _, m in mv.iterrows():
    ax.annotate(int(m["move"]), (m["x"], m["y"]), textcoords="offset points", xytext=(5, 5))
ax.invert_yaxis()
ax.set_aspect("equal")
ax.set_title(f"round {int(r['session_id'])}: delta_r1 = {r['delta_r1']:.1f}, theta2 = {r['theta2']:.2f} rad")
plt.show()"""),
    ("md", """\
## The move-2 view of three players

Each point is one eligible round. Where the first move raised the score
(`delta_r1 > 0`) most players keep going straight or nearly so (`theta2` near
0); where it lowered the score they turn around (`theta2` near +-pi). How
sharply they switch, and how far sideways they turn, differs between players:
that is the strategy the models estimate."""),
    ("code", """\
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=True)
for ax, s in zip(axes, (21, 24, 28)):
    obs = data.observations(s)
    ax.scatter(obs.delta_r1, obs.theta2, s=5, color="k", alpha=0.6)
    ax.set_title(f"subject {s}: {obs.n_rounds} rounds")
    ax.set_xlabel("delta_r1")
axes[0].set_ylabel("theta2 (rad)")
plt.show()"""),
    ("code", """\
# the same data as an xarray Dataset (dims: round), ready for ArviZ's constant/observed data
data.observations(28).to_xarray()"""),
]

NB["02_forward_bayesian_optimization"] = [
    ("md", """\
# 2. The forward model: Bayesian optimisation of move 2

To invert a strategy we first need the forward direction: given a strategy,
where would a player click on move 2? The package follows the paper:

1. **Surrogate.** After move 1 the player believes the score is a plane,
   `f(m) = m' beta + noise`, with a Gaussian prior on `beta`. Two observations
   (the start and move 1) give a Gaussian posterior and a predictive mean and
   sd at every candidate move 2.
2. **Acquisition function.** A strategy scores candidates by their predictive
   distribution: probability of improvement PI(xi), expected improvement
   EI(xi) or an upper confidence bound UCB(p). Larger xi or p favour
   uncertain (sideways) candidates: more exploration.
3. **Argmax curve.** The best candidate on the click circle around move 1 is
   at an angle `theta*(delta_r1)`. The method compares each player's turns
   with these curves."""),
    ("code", SETUP),
    ("code", """\
from ibo_pymc import plots
from ibo_pymc.forward import Surrogate, argmax_curve, load_tables

s = Surrogate()
theta = np.linspace(-np.pi, np.pi, 9)
mu, sd = s.predict(theta, 10.0)      # predictive mean and sd on the click circle after delta_r1 = 10
pd.DataFrame({"theta": theta, "mean": mu, "sd": sd}).round(3)"""),
    ("md", """\
Straight ahead (`theta = 0`) the mean is highest and the sd lowest; sideways
the sd grows. Each acquisition family trades these off differently. The
figure shows UCB(0.8) over the click region around move 1; the white dots are
its argmax on the boundary (mirrored, because everything is symmetric in
theta)."""),
    ("code", """\
fig = plots.plot_click_region_surface("UCB", 0.8, 5.0)
plt.show()"""),
    ("md", """\
## Acquisition values over (delta_r1, theta) and the argmax curve

For every `delta_r1` the argmax angle traces a curve. Pure exploitation
(PI with xi = 0, or UCB with p = 0.5, which are the same curve) goes straight
on after a gain and turns back after a loss; exploration bends the curve
sideways."""),
    ("code", """\
fig = plots.plot_acquisition_curves("EI", [0, 5, 15, 30])
plt.show()
d = np.linspace(-30, 30, 7)
print("PI(0) == UCB(0.5):", np.allclose(argmax_curve("PI", 0.0, d), argmax_curve("UCB", 0.5, d)))"""),
    ("md", """\
## The augmentation tau

Real players explore more than any of these curves allow. The augmented
functions of the paper (ũ) forbid angles that are not exploratory enough:
with threshold `tau`, after a gain the turn must exceed `tau`, after a loss it
must stay below `pi - tau`. ũ± uses separate thresholds `tau^-` (after a loss)
and `tau^+` (after a gain). The dashed line below is the plain curve, the
solid one the augmented curve."""),
    ("code", """\
fig = plots.plot_acquisition_surface("PI", 10.0, tau=0.6)
plt.show()"""),
    ("md", """\
## Argmax tables

Fitting needs `theta*` at every observed `delta_r1` for every candidate
strategy, thousands of times. The package computes the curves once on a grid
(family x parameter x tau x delta_r1), caches them per user, and interpolates.
The tables are an `xarray.DataArray` with named dims:"""),
    ("code", """\
tables = load_tables()
print(tables.data.dims, tables.data.shape)
tables.theta_star("UCB", 0.8, [-10.0, 5.0], tau=0.3)"""),
]

NB["03_fit_subject_28"] = [
    ("md", """\
# 3. Fitting subject 28: from data to an interpreted strategy

We now infer subject 28's strategy with the PyMC model (ũ±, the paper's best
model). Its unknowns are:

* the **family** k (PI, EI or UCB, prior 1/3 each) and its shape parameter
  (xi for PI and EI, p for UCB);
* **tau^-** and **tau^+**, the exploration thresholds after a loss and after a gain;
* **gamma**, the spread of the turns around the argmax (wrapped Cauchy);
* **w**, the share of turns to the right (+theta*) rather than the left.

The family is discrete, so it is **marginalised**: the likelihood sums over
the three families. `IBOModel.fit()` samples each family's conditional
posterior with NUTS, weighs them by their marginal likelihoods (bridge
sampling) and returns an `arviz.InferenceData` of the marginalised posterior
(its `component_evidence` group holds each family's log marginal likelihood
and posterior probability). (Why not sample the marginalised model directly? PI with xi near 0 and UCB
with p near 0.5 are the same curve, so joint chains get stuck in different
families; see `ibo_pymc/model/fit.py`.)"""),
    ("code", SETUP),
    ("code", """\
import arviz as az

from ibo_pymc.data import load_hotspot
from ibo_pymc.model import IBOModel

obs = load_hotspot().observations(28)
m = IBOModel(obs, model="tau_pm", draws=300 if QUICK else 1000, tune=300 if QUICK else 1000, seed=1)
m.build()   # the PyMC model of the paper (family marginalised)"""),
    ("code", """\
idata = m.fit(progress=False)
idata"""),
    ("md", """\
## Which strategy?

The posterior family probabilities, then each family's parameters given that
family, with 95% HDIs. A family with probability near 0 can be ignored."""),
    ("code", """\
m.family_probabilities()"""),
    ("code", """\
summ = m.summary()
summ[summ["probability"] > 0.01].round(3)"""),
    ("md", """\
## Did the sampler work?

R-hat near 1 and large effective sample sizes (ESS) for every quantity that
carries posterior mass; no divergences. `diagnostics()` covers the
marginalised posterior and each family's conditional chains."""),
    ("code", """\
diag = m.diagnostics()
print("divergences:", diag.attrs["divergences"], "of", diag.attrs["draws"], "draws")
diag[diag["checked"]].round(3)"""),
    ("code", """\
az.plot_trace(idata.conditional_posterior, var_names=["p_ucb", "gamma", "tau_neg", "tau_pos"],
              coords={"component": ["UCB"]}, compact=True)
plt.tight_layout()
plt.show()"""),
    ("md", """\
## The strategy as a picture

The credible band is where the posterior puts the acquisition curve
`+-theta*(delta_r1)` (95% HDI at each `delta_r1`); the grey prediction region
is where 95% of new move-2 turns should fall. Because turns are angles and go
both left and right, this region is circular and often two or more arcs; it
can wrap through +-pi."""),
    ("code", """\
from ibo_pymc.fit_plots import plot_fit
from ibo_pymc.regions import regions

reg = regions(idata, n_draws=400 if QUICK else 1000)
fig = plot_fit(idata, reg)
plt.show()
print("prediction arcs at delta_r1 = -20:", [tuple(round(v, 2) for v in a) for a in reg.prediction[int(np.argmin(abs(reg.delta_r1 + 20)))]])"""),
    ("md", """\
**Reading it.** Subject 28 behaves like UCB with p close to 0.5 (PI with xi
near 0 is the same curve, hence the split between those two families): pure
exploitation by the curve, but with large thresholds. After a loss
(`tau^-` high) the turn is pushed well away from straight back; after a gain
(`tau^+`) the turn is pushed away from straight on. So this player explores
far more than any plain acquisition curve allows, and mostly to the right
(w > 0.5).

## Save and reload

The NetCDF file holds the draws and the full configuration; `IBOModel.load`
rebuilds the model from it."""),
    ("code", """\
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as tmp:
    path = m.save(Path(tmp) / "subject-28.nc")
    again = IBOModel.load(path)
    print(again.config.model, again.obs.n_rounds, "rounds;",
          "same draws:", np.array_equal(again.idata.posterior["gamma"], idata.posterior["gamma"]))
    print(again.build().str_repr())"""),
]

NB["04_model_comparison"] = [
    ("md", """\
# 4. Comparing u, ũ and ũ±

Three nested models of a player's strategy:

* **u**: a plain acquisition function (family and parameter);
* **ũ**: the same with one exploration threshold tau;
* **ũ±**: separate thresholds after a loss (tau^-) and after a gain (tau^+).

We compare them two ways: **PSIS-LOO** (ArviZ's leave-one-out estimate of
predictive accuracy from one fit per model) and the paper's **held-out**
protocol (fit on 80% of a player's rounds, score the other 20%)."""),
    ("code", SETUP),
    ("code", """\
import arviz as az

from ibo_pymc.compare import heldout_lppd, loo_table, reliable_loo
from ibo_pymc.data import load_hotspot, load_split
from ibo_pymc.model import IBOModel

data = load_hotspot()
kw = dict(draws=300 if QUICK else 1000, tune=300 if QUICK else 1000, seed=1)
fits = {mdl: IBOModel(data.observations(24), model=mdl, **kw) for mdl in ("u", "tau", "tau_pm")}
idatas = {mdl: f.fit(progress=False) for mdl, f in fits.items()}
# every elpd made reliable: PSIS per mixture component, moment matching,
# then exact refits of the rounds still at Pareto k > 0.7
loos = {mdl: reliable_loo(f) for mdl, f in fits.items()}
loo_table(loos).round(2)"""),
    ("code", """\
az.plot_compare(az.compare({mdl: elpd for mdl, (elpd, _) in loos.items()}))
plt.show()"""),
    ("md", """\
`max_pareto_k` is the largest Pareto k of the estimates used: PSIS runs on
each family's own draws (a fit's posterior is a mixture of them), components
with k above 0.7 are moment-matched, and any round still above 0.7 is
refitted without it (`n_refit`), so every value in the table can be trusted.
Next the held-out protocol with the paper's split: fit each
model to subject 24's training rounds and compute the log pointwise predictive
density of the test rounds under that posterior."""),
    ("code", """\
from pathlib import Path

from ibo_pymc.data import random_split

# the paper's split lies beside the raw logs in this project; otherwise a seeded random 80/20 split
paper_split = Path(os.environ.get("IBO_DATA_DIR", "")).parent / "paper_splits.csv"
split = load_split(paper_split, data) if paper_split.is_file() else random_split(data, seed=0)
print("split:", split.source)
train, test = split.partition(data.observations(24))
rows = {}
for mdl in ("u", "tau", "tau_pm"):
    f = IBOModel(train, model=mdl, **kw)
    rows[mdl] = heldout_lppd(f.fit(progress=False), test)
pd.Series(rows, name="held-out lppd, subject 24").round(2)"""),
    ("md", """\
## The whole cohort

Fitting 3 x 2 models for 28 players takes several minutes, so this notebook
reads the committed output of

    ibo-compare --subject all --split paper_splits.csv --csv models/comparison/compare.csv

and sets the totals next to the paper's Table 1 (held-out log-likelihoods of
the MAP fit of the paper's grid method: -2036.46 for u, -1843.54 for ũ,
-1709.19 for ũ±)."""),
    ("code", """\
repo = Path.cwd() if (Path.cwd() / "models").is_dir() else Path.cwd().parent
rows = pd.read_csv(repo / "models" / "comparison" / "compare.csv")
paper = {"u": -2036.46, "tau": -1843.54, "tau_pm": -1709.19}
tot = rows.groupby("model", sort=False).agg(elpd_loo=("elpd_loo", "sum"), holdout_lppd=("holdout_lppd", "sum"))
tot["paper_table1_heldout"] = pd.Series(paper)
best = rows.loc[rows.groupby("subject")["elpd_loo"].idxmax(), "model"].value_counts()
tot["best_by_loo"] = best
tot.round(2)"""),
    ("md", """\
Both criteria rank the models as the paper does: ũ± > ũ > u in total. The
sampled model's held-out values are higher than the paper's because they
average the predictive density over the posterior instead of plugging in the
MAP cell of a grid. Per player the picture is mixed: for some the simpler
models are as good (their LOO differences are within two standard errors)."""),
    ("code", """\
from ibo_pymc.fit_plots import plot_loo

# differences from ũ± per subject (the CSV has no pointwise values, so no error bars here;
# `ibo-compare --plot` draws them with +-2 se)
ref = rows[rows["model"] == "tau_pm"].set_index("subject")["elpd_loo"]
fig = plot_loo(rows.assign(diff_ref=rows["elpd_loo"] - rows["subject"].map(ref), se_diff_ref=0.0))
plt.show()"""),
]

NB["05_simulation_and_calibration"] = [
    ("md", """\
# 5. Can we trust the posteriors? Simulation and calibration

Three checks, from simple to strict:

1. **Parameter recovery**: simulate a player with known parameters and see
   whether the fit finds them.
2. **Coverage** (the paper's appendix C): over many simulated players, how
   often does the 95% credible set of the grid method contain the true
   acquisition function?
3. **Simulation-based calibration (SBC)**: draw parameters from the prior,
   simulate, fit, and record where the truth falls among the posterior draws.
   For a calibrated method these ranks are uniform for every parameter."""),
    ("code", SETUP),
    ("code", """\
from ibo_pymc.model import IBOModel
from ibo_pymc.simulate import Truth, simulate_moves

truth = Truth("UCB", 0.8, gamma=0.2, w=0.7, tau_neg=0.9, tau_pos=0.2)
obs = simulate_moves(truth, 150, rng=1)
m = IBOModel(obs, "tau_pm", draws=300 if QUICK else 1000, tune=300 if QUICK else 1000, seed=2)
m.fit(progress=False)
print(m.family_probabilities().round(3).to_dict())
summ = m.summary().query("family == 'UCB'").set_index("parameter")
summ["truth"] = [truth.param, truth.gamma, truth.w, truth.tau_neg, truth.tau_pos]
summ[["mean", "hdi_0.95_low", "hdi_0.95_high", "truth"]].round(3)"""),
    ("md", """\
## Coverage (paper Table 3, small)

`coverage` follows the protocol behind the paper's saved replicates: it
simulates `n_obs` rounds per replicate around a grid-node truth with w = 0.5
and gamma = 0.2555 (the gamma-grid node nearest 0.25), fits model u with the
grid method and asks whether the truth lies within its family's parameter
range in the joint 95% credible set, and whether gamma lies within the set's
gamma range. The full tables use 1000 replicates per cell
(`ibo-simulate table3 --reps 1000`); here a few cells with fewer."""),
    ("code", """\
from ibo_pymc.simulate.coverage import coverage, protocol_gamma, truths

gamma = protocol_gamma("reference")
reps = 60 if QUICK else 300
rows = []
for fam, p in [("PI", truths()["PI"][1]), ("UCB", truths()["UCB"][1])]:
    c = coverage(fam, p, 100, reps, gamma=gamma, seed=0)
    rows.append({"function": f"{fam}({p:g})", "n_obs": 100, "gamma": gamma, "truth covered": c.rate("truth"),
                 "gamma covered": c.rate("gamma"), "mc_se": c.mcse(), "reps": reps})
pd.DataFrame(rows).round(3)"""),
    ("md", """\
## SBC of the ũ± model (small)

Each replicate draws a family and every parameter from the prior, simulates
60 rounds, fits, and ranks the truth among 99 posterior draws. With few
replicates the histograms are noisy; the committed run uses 200
(`ibo-simulate sbc --model tau_pm --reps 200`)."""),
    ("code", """\
from ibo_pymc.simulate.sbc import plot_ranks, run_sbc, uniformity

ranks = run_sbc("tau_pm", 8 if QUICK else 40, seed=0, n_obs=60)
uniformity(ranks).round(3)"""),
    ("code", """\
fig = plot_ranks(ranks)
plt.show()"""),
    ("md", """\
## Simulated players in the study's format

The whole-round simulator writes logs exactly like the study's, so every
tool runs on simulated players too. The demo cohort is made
this way (`--data demo` in every command generates it once into the per-user
cache)."""),
    ("code", """\
import tempfile

from ibo_pymc.data import load_hotspot
from ibo_pymc.simulate.task import write_cohort

with tempfile.TemporaryDirectory() as tmp:
    sim = write_cohort(tmp, {501: Truth("PI", 8.0, tau_neg=0.5)}, 80, seed=3)
    d = load_hotspot(tmp)
    print(d.exclusion_counts())
    back = d.rounds.merge(sim, on="session_id", suffixes=("", "_simulated"))
    print("largest |theta2 difference| after the round trip:",
          float(np.abs(np.angle(np.exp(1j * (back.theta2 - back.theta2_simulated)))).max()))"""),
]


def build(name: str) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.cells = [new_markdown_cell(src) if kind == "md" else new_code_cell(src) for kind, src in NB[name]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def execute(nb, cwd: Path, timeout: int = 600):
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--execute", action="store_true", help="run each notebook and store its outputs")
    ap.add_argument("names", nargs="*", help="notebooks to build (default: all)")
    args = ap.parse_args()
    for name in args.names or NB:
        nb = build(name)
        if args.execute:
            t = time.perf_counter()
            execute(nb, HERE)
            print(f"{name}: executed in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        nbformat.write(nb, HERE / f"{name}.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
