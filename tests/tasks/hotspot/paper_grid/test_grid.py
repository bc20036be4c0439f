"""The grid engine against brute force, and the reproduction of the paper's tables."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ibo_pymc.tasks.hotspot.circular import wrapped_cauchy_pdf
from ibo_pymc.tasks.hotspot.forward import TableConfig, build_tables
from ibo_pymc.tasks.hotspot.paper_grid import PaperGridConfig, fit_paper_grid
from ibo_pymc.tasks.hotspot.paper_grid.reproduce import fit_subject, reproduce
from tests.paper_values import TABLE1, TABLE1_TOTALS, TABLE2

SMALL = PaperGridConfig(tables=TableConfig(n_param=6, n_tau=5, n_theta=90), n_gamma=9)


def _brute_force(tables, cfg, d, x, model):
    """An independent, loop-based version of the reference EM + MAP."""
    c = tables.config
    taus = c.tau if model != "u" else np.array([0.0])
    gammas = cfg.gamma
    cells = []
    for f in c.families:
        for p in c.params(f):
            if model == "tau_pm":
                for tn, tp in itertools.product(taus, taus):
                    cells.append((f, p, tn, tp))
            else:
                for t in taus:
                    cells.append((f, p, t, t))
    curves = np.array([tables.theta_star(f, p, d, tau=tp, tau_neg=tn) for f, p, tn, tp in cells])
    neg = d < 0
    halves = [neg, ~neg] if model == "tau_pm" else [np.ones(len(d), bool)]
    w = np.full(len(d), 0.5)
    new = w.copy()
    it = 0
    while it == 0 or (np.abs(new - w).sum() >= cfg.em_tol and it < cfg.em_max_passes):
        w = new.copy()
        ll = np.zeros((len(cells), len(gammas)))
        for gi, g in enumerate(gammas):
            h1 = wrapped_cauchy_pdf(x, curves, g)
            h2 = wrapped_cauchy_pdf(x, -curves, g)
            ll[:, gi] = np.log(w * h1 + (1 - w) * h2).sum(axis=1)
        ci, gi = np.unravel_index(np.argmax(ll), ll.shape)
        h1 = wrapped_cauchy_pdf(x, curves[ci], gammas[gi])
        h2 = wrapped_cauchy_pdf(x, -curves[ci], gammas[gi])
        new = h1 / (h1 + h2)
        it += 1
    return cells[ci], gammas[gi], ll.max(), new, [new[h].mean() for h in halves], it


@pytest.mark.parametrize("model", ["u", "tau", "tau_pm"])
def test_engine_matches_brute_force(model):
    rng = np.random.default_rng(7)
    tables = build_tables(SMALL.tables)
    d = rng.uniform(-30, 30, 40)
    truth = tables.theta_star("UCB", 0.8, d, tau=0.6, tau_neg=1.0)
    side = rng.random(40) < 0.7
    x = np.where(side, truth, -truth) + 0.25 * np.tan(np.pi * (rng.random(40) - 0.5))
    x = np.angle(np.exp(1j * x))
    fit = fit_paper_grid(d, x, model, config=SMALL, tables=tables)
    cell, g, llmax, resp, halves, it = _brute_force(tables, SMALL, d, x, model)
    assert fit.map["loglik"] == pytest.approx(llmax, rel=1e-10)
    assert fit.map["gamma"] == pytest.approx(g)
    # the MAP curve is the brute-force MAP curve (labels may differ only on exact ties)
    bf_curve = tables.theta_star(cell[0], cell[1], d, tau=cell[3], tau_neg=cell[2])
    assert np.allclose(fit.map_curve(d), bf_curve)
    assert fit.w_em == pytest.approx(resp.mean(), abs=1e-9)
    assert fit.em_passes == it
    post = fit.posterior
    assert post.sum().item() == pytest.approx(1.0)
    assert fit.log_likelihood.max().item() == pytest.approx(llmax, rel=1e-10)
    probs = fit.family_probabilities()
    assert probs.sum() == pytest.approx(1.0)
    cs = fit.credible_set()
    assert cs["cumulative"].iloc[-1] >= 0.95 - 1e-9
    assert len(cs) == 1 or cs["cumulative"].iloc[-2] < 0.95


def test_pi0_ucb05_tie_reported_as_ucb():
    # data exactly on the pure-exploitation curve: PI(0) and UCB(0.5) tie exactly
    rng = np.random.default_rng(2)
    d = rng.uniform(-30, 30, 60)
    x = np.where(d < 0, np.pi, 0.0) + rng.normal(0, 0.05, 60)
    fit = fit_paper_grid(d, x, "u", config=SMALL)
    assert fit.map["family"] == "UCB" and fit.map["param"] == 0.5
    ll = fit.log_likelihood
    assert ll.sel(family="PI", param_index=0).max().item() == ll.sel(family="UCB", param_index=0).max().item()


def test_unknown_model_is_input_error():
    from ibo_pymc.errors import InputError

    with pytest.raises(InputError, match="unknown model"):
        fit_paper_grid([1.0], [0.1], "bogus")


@pytest.mark.parametrize("subject", [6, 21, 28])
def test_reproduces_paper_subjects(hotspot, paper_split, subject):
    train, test = paper_split.partition(hotspot.observations(subject))
    rows = {r["model"]: r for r in fit_subject(train, test, PaperGridConfig())}
    for k, model in enumerate(("u", "tau", "tau_pm")):
        assert rows[model]["oos_loglik"] == pytest.approx(TABLE1[subject][k], abs=0.01)
    fam, par, tn, tp, g, w = TABLE2[subject][:6]
    r = rows["tau_pm"]
    assert r["family"] == fam
    assert round(r["param"], 2) == pytest.approx(par)
    assert (round(r["tau_neg"], 2), round(r["tau_pos"], 2)) == (tn, tp)
    assert (round(r["gamma"], 2), round(r["w_em"], 2)) == (g, w)


def test_reproduces_paper_tables_whole_cohort(hotspot, paper_split):
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2) as ex:
        res = reproduce(hotspot, paper_split, config=PaperGridConfig(), executor=ex, progress=lambda p: None)
    t1 = res.table1.set_index("subject")
    for s, vals in TABLE1.items():
        for k, model in enumerate(("u", "tau", "tau_pm")):
            assert t1.loc[s, model] == pytest.approx(vals[k], abs=0.01), (s, model)
    for k, model in enumerate(("u", "tau", "tau_pm")):
        assert t1.loc["total", model] == pytest.approx(TABLE1_TOTALS[k], abs=0.05)
    t2 = res.table2.set_index("subject")
    for s, (fam, par, tn, tp, g, w, dr2, dr3, tot) in TABLE2.items():
        r = t2.loc[s]
        got = (
            r.family,
            round(r.param, 2),
            round(r.tau_neg, 2),
            round(r.tau_pos, 2),
            round(r.gamma, 2),
            round(r.w_em, 2),
            round(r.mean_dr2, 2),
            round(r.mean_dr3, 2),
            round(r.mean_total, 2),
        )
        assert got == (fam, par, tn, tp, g, w, dr2, dr3, tot), s


def test_reproduce_cli_contract(tmp_path, raw_folder):
    """The CLI on two subjects of a random split: files, columns, exit code."""
    import shutil
    import subprocess
    import sys

    import pandas as pd

    two = tmp_path / "two"
    two.mkdir()
    for uid in (38, 64):
        for kind in ("eventrec", "sesrec"):
            shutil.copy(raw_folder / f"{kind}{uid}.csv", two)
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ibo_pymc.cli.reproduce",
            "--data",
            str(two),
            "--out",
            str(out),
            "--workers",
            "1",
            "--quiet",
            "--split",
            "random",
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    fits = pd.read_csv(out / "fits.csv")
    assert list(fits.columns) == [
        "model",
        "subject",
        "family",
        "param",
        "tau",
        "tau_neg",
        "tau_pos",
        "gamma",
        "w_em",
        "oos_loglik",
    ]
    assert len(fits) == 6 and set(fits["family"]) <= {"PI", "EI", "UCB"}
    assert (fits.loc[fits.model == "u", ["tau", "tau_neg", "tau_pos"]] == 0).all().all()
    tau = fits[fits.model == "tau"]
    assert (tau["tau_neg"] == tau["tau_pos"]).all()
    t1 = pd.read_csv(out / "table1.csv")
    assert list(t1.columns) == ["subject", "u", "tau", "tau_pm"] and t1["subject"].iloc[-1] == "total"
    t2 = pd.read_csv(out / "table2.csv")
    assert list(t2.columns) == [
        "subject",
        "family",
        "param",
        "tau_neg",
        "tau_pos",
        "gamma",
        "w_em",
        "mean_dr2",
        "mean_dr3",
        "mean_total",
    ]
    split = pd.read_csv(out / "split.csv")
    assert (split.groupby("subject")["set"].apply(lambda s: (s == "train").mean()).between(0.78, 0.82)).all()


def test_reproduce_bad_split_exit_2(tmp_path, raw_folder):
    import subprocess
    import sys

    bad = tmp_path / "split.csv"
    bad.write_text("subject,session_id,set\n1,9434,validation\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ibo_pymc.cli.reproduce",
            "--data",
            str(raw_folder),
            "--split",
            str(bad),
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "split.csv:2: field 'set'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def _row_loglik_one_at_a_time(rows_t, s_plus, s_minus, w, gamma):
    """The grid kernel's arithmetic one gamma and one row at a time, in Python: every product over its rounds in
    order, one logarithm per block of rounds."""
    import math

    from ibo_pymc.tasks.hotspot.kernel import bracket, scale_terms

    N, R = rows_t.shape
    out = np.empty((R, len(gamma)))
    for g, gam in enumerate(gamma):
        sh2, const, block = scale_terms(gam, N)
        x = [bracket(sh2, s_plus[v], s_minus[v], w[v]) for v in range(len(s_plus))]
        for r in range(R):
            acc = 0.0
            for b0 in range(0, N, block):
                prod = 1.0
                for i in range(b0, min(b0 + block, N)):
                    prod *= x[rows_t[i, r]]
                acc += math.log(prod)
            out[r, g] = acc + const
    return out


@pytest.mark.parametrize("n_gamma", [1, 8, 13])
def test_grid_kernel_is_the_one_at_a_time_arithmetic_to_the_bit(n_gamma):
    """The kernel takes several gammas per pass over the rounds (a last, partial pass too); each product still runs
    over its rounds in order with its gamma's blocks (gammas down to 1e-12: blocks of fewer rounds), so every value
    is the same to the bit."""
    from ibo_pymc.tasks.hotspot.paper_grid.engine import _row_loglik

    rng = np.random.default_rng(n_gamma)
    N, R, V = 150, 120, 300
    rows_t = rng.integers(0, V, size=(N, R)).astype(np.int32)
    s_plus, s_minus, w = rng.random(V), rng.random(V), rng.random(V)
    gamma = np.geomspace(1e-12, 3.0, n_gamma)
    np.testing.assert_array_equal(
        _row_loglik(rows_t, s_plus, s_minus, w, gamma), _row_loglik_one_at_a_time(rows_t, s_plus, s_minus, w, gamma)
    )
