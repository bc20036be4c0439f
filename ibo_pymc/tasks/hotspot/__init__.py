"""The hotspot task (Sandholtz et al. 2022) on the task interface.

Its pieces predate the interface and stay where they are (their saved fits and
tables are unchanged by the move): data in :mod:`ibo_pymc.tasks.hotspot.data` (raw logs, or
a tidy table of rounds: :mod:`ibo_pymc.data.table`), the forward model in
:mod:`ibo_pymc.tasks.hotspot.forward` (acquisition families, the surrogate, argmax tables),
the choice likelihood (the wrapped-Cauchy mixture) and the fit in
:mod:`ibo_pymc.tasks.hotspot.model`, the paper's grid method in :mod:`ibo_pymc.tasks.hotspot.paper_grid`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HotspotTask:
    name: str = "hotspot"
    families: tuple = ("PI", "EI", "UCB")
    #: what the task's data calls one person
    unit_name: str = "subject"
    #: the task's models (each subject is fitted under every one of them for model comparison)
    models: tuple = ("u", "tau", "tau_pm")
    #: the command-line option that picks one model, and the options that pick the data within a subject
    model_option: str = "model"
    where_options: tuple = ()

    @property
    def model_labels(self) -> dict:
        """Display names of the models (u, ũ, ũ±)."""
        from ibo_pymc.tasks.hotspot.population.workflow import variant_labels

        return variant_labels(self.models)

    #: display names of parameters in figures
    parameter_labels = {"tau_neg": "tau^-", "tau_pos": "tau^+"}

    def cohort_fits(self, dataset, subjects, folder, *, models=None, split=None, executor=None, log=None, **settings):
        """Every subject's fit under every model of ``models`` (default all three), saved in ``folder`` and
        reused when current (:func:`~ibo_pymc.tasks.hotspot.model.fit_many.fit_cohort`): the execution layer's
        outcome, whose results are the fits in (subject, model) order as :class:`~ibo_pymc.io.SavedFit` (their
        paths, with the evidence rows computed while each was in memory). With ``split`` (a
        :class:`~ibo_pymc.tasks.hotspot.data.splits.Split`): the fits of each subject's training rounds."""
        from ibo_pymc.execution import Outcome
        from ibo_pymc.tasks.hotspot.model.config import FitConfig
        from ibo_pymc.tasks.hotspot.model.fit_many import cohort_jobs, fit_cohort

        jobs = cohort_jobs(dataset, subjects, list(models or self.models), FitConfig(**settings), split=split)
        if split is not None:
            jobs = [j for j in jobs if j.tag == "-train"]
        done = fit_cohort(jobs, folder, executor=executor, log=log)
        return Outcome(done.saved(), list(done.failures))

    def model(self, observations, *, model: str = "tau_pm", **settings):
        """One subject's model (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`), not yet fitted."""
        from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel

        return IBOModel(observations, config=FitConfig(model=model, **settings))

    def fits_table(self, paths, *, executor=None):
        """The convergence table of saved fits: per fit, worst R-hat, smallest ESS, divergences, thinning,
        family probabilities, and the quantities that miss the targets
        (:func:`~ibo_pymc.tasks.hotspot.model.report.convergence_row`), one job per fit on ``executor``."""
        import pandas as pd

        from ibo_pymc.execution import Job, run_jobs
        from ibo_pymc.tasks.hotspot.model.fit_many import convergence_of

        jobs = [Job(f"convergence of {p}", convergence_of, (str(p),)) for p in paths]
        return pd.DataFrame(run_jobs(jobs, executor, label="convergence").raise_failures().results)

    def fits_table_name(self, *, model: str) -> str:
        """The file name of :meth:`fits_table` beside the fits of one model."""
        return f"convergence-{model}.csv"

    #: whether :meth:`fits_table` holds posterior intervals (``ibo-sample --hdi-prob`` applies to it)
    fits_table_intervals = False

    #: how :meth:`fits_table`'s numbers are written
    fits_table_float_format = "%.4g"

    def compare_cohort(
        self,
        dataset,
        subjects,
        folder,
        *,
        split=None,
        seed: int = 0,
        holdout: bool = True,
        refit: bool = True,
        executor=None,
        log=None,
        **settings,
    ):
        """u, ũ and ũ± compared for every subject by reliable LOO and, with ``holdout``, by the held-out lppd of
        the test rounds of ``split`` (a split file; default a random 80/20 split seeded by ``seed``, which also
        seeds new fits)
        (:func:`~ibo_pymc.tasks.hotspot.compare.compare_cohort`): a :class:`~ibo_pymc.tasks.base.Comparison`."""
        from ibo_pymc.tasks.hotspot.compare import compare_cohort
        from ibo_pymc.tasks.hotspot.data import load_split, random_split
        from ibo_pymc.tasks.hotspot.model.config import FitConfig

        if holdout:
            split = load_split(split, dataset) if split else random_split(dataset, seed=seed)
        else:
            split = None
        return compare_cohort(
            dataset,
            subjects,
            folder,
            config=FitConfig(seed=seed, **settings),
            split=split,
            refit=refit,
            executor=executor,
            log=log,
        )

    def plot_comparison(self, table):
        """The comparison's LOO differences (:func:`~ibo_pymc.tasks.hotspot.fit_plots.plot_loo`)."""
        from ibo_pymc.tasks.hotspot.fit_plots import plot_loo

        return plot_loo(table)

    # --- the paper's simulation studies (appendix C): ibo-simulate coverage, table3, table4, demo -----------
    def demo(self, out=None) -> str:
        """Write the simulated demo cohort (logs in the study's format and ``truth.csv``) into ``out`` (default:
        the per-user cache folder that ``--data demo`` reads); returns what was written, in words."""
        from ibo_pymc.tasks.hotspot.datasets import demo_dir
        from ibo_pymc.tasks.hotspot.simulate.task import DEMO_ROUNDS, DEMO_TRUTHS, ensure_demo, write_demo

        if out is None:
            out = ensure_demo(demo_dir())
        else:
            write_demo(out)
        return f"{len(DEMO_TRUTHS)} simulated players, {DEMO_ROUNDS} rounds each, and truth.csv are in {out}"

    def coverage_gamma(self, protocol: str, gamma=None, *, data=None, split=None, log=None) -> float:
        """The generating scale of the coverage study: ``gamma`` (a number), the ``protocol``'s (None), or
        ``"study"``: the reference scripts' formula on the u fits of the training rounds of ``split`` (a split
        file; default a random 80/20 split, seed 0) of ``data``
        (:func:`~ibo_pymc.tasks.hotspot.simulate.coverage.study_gamma`); ``log`` receives how it was found."""
        from ibo_pymc.tasks.hotspot.data import load_split, random_split
        from ibo_pymc.tasks.hotspot.simulate.coverage import protocol_gamma, study_gamma

        if gamma is None:
            return protocol_gamma(protocol)
        if gamma != "study":
            return float(gamma)
        dataset = self.load(data)
        split = load_split(split, dataset) if split else random_split(dataset, seed=0)
        value = study_gamma([split.partition(dataset.observations(s))[0] for s in dataset.subjects])
        if log:
            n = len(dataset.subjects)
            log(
                f"gamma = {value:.4f}: the gamma-grid node nearest the mean of the u fits' MAP gammas "
                f"({n} subject{'s' if n != 1 else ''}, training rounds)"
            )
        return value

    def coverage(
        self,
        family: str,
        param: float,
        n_obs: int,
        reps: int,
        *,
        protocol: str = "reference",
        rule: str | None = None,
        **options,
    ):
        """Coverage of one cell of the paper's Table 3 (or 4 with ``omit``) over ``reps`` replicates
        (:func:`~ibo_pymc.tasks.hotspot.simulate.coverage.coverage`; ``rule`` default: the ``protocol``'s)."""
        from ibo_pymc.tasks.hotspot.simulate.coverage import PROTOCOLS, coverage

        return coverage(family, param, n_obs, reps, rule=rule or PROTOCOLS[protocol][2], **options)

    def coverage_table(self, reps: int, **options):
        """All 27 cells of Table 3 (or 4 with ``omit``)
        (:func:`~ibo_pymc.tasks.hotspot.simulate.coverage.paper_table`)."""
        from ibo_pymc.tasks.hotspot.simulate.coverage import paper_table

        return paper_table(reps, **options)

    def load_split(self, path, dataset):
        """A train/test split of the rounds (``subject,session_id,set``;
        :func:`~ibo_pymc.tasks.hotspot.data.load_split`)."""
        from ibo_pymc.tasks.hotspot.data import load_split

        return load_split(path, dataset)

    def heldout_comparison(self, hierarchical, train_fits, dataset, split):
        """Held-out lppd of each subject's test rounds alone and under the hierarchical model of the training
        fits (:func:`~ibo_pymc.tasks.hotspot.population.workflow.heldout_comparison`)."""
        from ibo_pymc.tasks.hotspot.population.workflow import heldout_comparison

        tests = {int(m.obs.subject): split.partition(dataset.observations(int(m.obs.subject)))[1] for m in train_fits}
        return heldout_comparison(hierarchical, train_fits, tests)

    def load_fit(self, path):
        """A saved fit as its model (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`)."""
        from ibo_pymc.tasks.hotspot.model.fit import IBOModel

        return IBOModel.load(path)

    def plot_fit(self, model, *, seed: int = 0):
        """One subject's moves with the prediction region of theta2 and the credible band of the acquisition curve
        (paper Figs 7-8; ``seed``: the draws of the regions)."""
        return model.plot(seed=seed)

    def plot_cohort(self, models, *, seed: int = 0):
        """Several subjects' fits in one figure: the grid of the paper's Fig 12
        (:func:`~ibo_pymc.tasks.hotspot.fit_plots.plot_cohort`)."""
        from ibo_pymc.tasks.hotspot.fit_plots import plot_cohort

        return plot_cohort({int(m.obs.subject): m.idata for m in models}, seed=seed)

    def load(self, data=None, *, progress: bool = True, subjects=None):
        """:class:`~ibo_pymc.tasks.hotspot.data.rounds.HotspotData` from raw logs, a tidy table of rounds,
        ``"demo"`` or None (``subjects``: of raw logs, only these subjects' are read)."""
        from ibo_pymc.tasks.hotspot.datasets import load_data

        return load_data(data, progress=progress, subjects=subjects)

    def fetch(self, dest=None, *, progress: bool = True):
        """Download the 56 pinned raw-log files into ``dest`` (default: the per-user cache), hash-checked."""
        from ibo_pymc.tasks.hotspot.data import fetch

        return fetch(dest, progress=progress)

    def verify(self, data=None) -> tuple:
        """``(folder, {file: what is wrong})`` for the pinned raw logs in the folder ``data`` names."""
        from ibo_pymc.errors import InputError
        from ibo_pymc.tasks.hotspot.data.fetch import check
        from ibo_pymc.tasks.hotspot.datasets import resolve_data_dir

        folder = resolve_data_dir(data)
        if not folder.is_dir():
            raise InputError("not a folder", path=folder)
        return folder, check(folder)

    def observations_table(self, dataset) -> tuple:
        """The eligible rounds as one table (``subject,user_id,session_id,round_index,delta_r1,theta2``) and
        what it holds, in words."""
        table = dataset.observations_frame()
        return table, f"{len(table)} rounds of {table['subject'].nunique()} subjects"

    def summary_report(self, dataset) -> tuple:
        """Per subject: eligible rounds and task performance (paper Table 2, columns 6-8), and that table beside
        the rounds removed (burn-in, reachable hotspot) as text."""
        import pandas as pd

        table = dataset.summary()
        excl = dataset.exclusion_counts()
        shown = table.merge(excl[["subject", "logged", "burn_in", "reachable"]], on="subject")
        shown = shown[
            ["subject", "user_id", "logged", "burn_in", "reachable", "n_rounds", "mean_dr2", "mean_dr3", "mean_total"]
        ]
        with pd.option_context("display.width", 120, "display.max_rows", 500):
            text = shown.to_string(index=False, float_format=lambda v: f"{v:.2f}")
        text += (
            f"\n{len(table)} subjects, {int(excl['logged'].sum())} rounds logged; removed "
            f"{int(excl['burn_in'].sum())} burn-in and {int(excl['reachable'].sum())} reachable-hotspot rounds; "
            f"{int(table['n_rounds'].sum())} eligible"
        )
        return table, text

    def subjects(self, dataset) -> list[int]:
        return list(dataset.subjects)

    def where(self, dataset, **given) -> tuple:
        """``(dataset, where)``: the hotspot task fits every round of a subject; it has no where options."""
        if given:
            raise TypeError(f"the hotspot task has no {', '.join(given)}")
        return dataset, {}

    def observations(self, dataset, subject: int, **where):
        if where:
            raise TypeError(f"the hotspot task has no {', '.join(where)}")
        return dataset.observations(subject)

    def fit(self, observations, *, model: str = "tau_pm", progress: bool = False, **config):
        """The family-marginalised posterior of one subject (:class:`~ibo_pymc.tasks.hotspot.model.fit.IBOModel`)."""
        from ibo_pymc.tasks.hotspot.model.fit import FitConfig, IBOModel

        m = IBOModel(observations, config=FitConfig(model=model, **config))
        m.fit(progress=progress)
        return m.idata

    def sbc(self, data, reps: int, *, seed: int = 0, executor=None, model: str = "tau_pm", n_obs: int = 60, **settings):
        """Simulation-based calibration: ``reps`` subjects drawn from the generative model, fitted; their ranks
        (:func:`ibo_pymc.tasks.hotspot.simulate.sbc.run_sbc`). ``data`` is not read (the move-2 simulator draws
        delta_r1)."""
        from ibo_pymc.tasks.hotspot.simulate.sbc import run_sbc

        return run_sbc(model, reps, seed=seed, executor=executor, n_obs=n_obs, **settings)

    def reproduce(self, dataset, *, split="paper", seed: int | None = None, subjects=None, executor=None, log=None):
        """Tables 1 and 2 of the paper with its grid method
        (:func:`ibo_pymc.tasks.hotspot.paper_grid.reproduce.reproduce`) as a
        :class:`~ibo_pymc.tasks.base.Reproduction`: ``fits``, ``table1``, ``table2`` (and ``split`` for a random
        split). ``split``: ``"paper"`` (the paper's 80/20 split, shipped with the package), ``"random"`` (seeded
        by ``seed``, default 0), a split file, or a :class:`~ibo_pymc.tasks.hotspot.data.splits.Split`; ``log``
        receives the line that says which."""
        import pandas as pd

        from ibo_pymc.tasks.base import Reproduction
        from ibo_pymc.tasks.hotspot.data import load_split, paper_split, random_split
        from ibo_pymc.tasks.hotspot.data.splits import Split, split_frame
        from ibo_pymc.tasks.hotspot.paper_grid.engine import PaperGridConfig
        from ibo_pymc.tasks.hotspot.paper_grid.reproduce import reproduce

        if isinstance(split, Split):
            which = "the split given"
        elif split == "paper":
            split, which = paper_split(dataset), "the paper's 80/20 split"
        elif split == "random":
            seed = seed or 0
            split, which = random_split(dataset, seed=seed), f"a random 80/20 split (seed {seed}; written to split.csv)"
        else:
            which = f"the split of {split}"
            split = load_split(split, dataset)
        if log:
            log(f"train/test split: {which}")
        res = reproduce(dataset, split, config=PaperGridConfig(), subjects=subjects, executor=executor)
        tables = {"fits": res.fits, "table1": res.table1, "table2": res.table2}
        if which.startswith("a random"):
            tables["split"] = split_frame(split, dataset)
        with pd.option_context("display.width", 140, "display.max_rows", 100):
            report = "\n".join(
                [
                    f"Table 1: out-of-sample log-likelihood ({which})",
                    res.table1.to_string(index=False, float_format=lambda v: f"{v:.2f}"),
                    "\nTable 2: MAP estimates of the ũ± model and task performance",
                    res.table2.to_string(index=False, float_format=lambda v: f"{v:.2f}"),
                ]
            )
        return Reproduction(tables, report, {"table1": "%.2f"})
