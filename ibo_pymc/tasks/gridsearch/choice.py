"""The grid task's acquisition families and softmax choice rule, with analytic gradients.

Before choice t of a round the surrogate gives every option's posterior mean
``mu`` and standard deviation ``s = sqrt(var)``; the family turns them into a
value ``q`` and the choice follows the softmax with temperature tau,
``P(option j) = exp(q_j / tau) / sum_i exp(q_i / tau)``. Families (the
acquisition functions of Wu et al. 2018, 2020; ``y*`` the best reward seen so
far in the round, ``z = (mu - y*) / s``):

======== ======================================= ==========
UCB      ``q = mu + beta s``                     beta
EI       ``q = (mu - y*) Phi(z) + s phi(z)``     --
PI       ``q = Phi(z)``                          --
mean     ``q = mu`` (pure exploitation)          --
variance ``q = s`` (pure exploration)            --
PMU      ``q = P(its reward is the largest)``    --
======== ======================================= ==========

PMU, the probability of maximum utility (Wu et al. 2018), is the probability
that an option's reward is the largest, the options' rewards drawn
independently from their posteriors. The published code estimates it by
sampling every option 1000 times and counting wins, with fresh draws at every
evaluation, so its likelihood is random and flat between jumps. Here it is the
conditional (Rao-Blackwellised) Monte Carlo estimate on fixed draws
(:func:`pmu_draws`: :data:`PMU_DRAWS` standard normal vectors, one seed for
every fit): ``q_j = mean_s Phi((mu_j - M_js) / s_j)``, ``M_js`` the largest
other option's draw ``mu_i + s_i eps_si`` in draw ``s``. The model is then
deterministic given those random numbers, continuous in its parameters (with
kinks where a draw's largest competitor changes), with the gradient of the
estimate. Its error against the exact probability (adaptive quadrature) is
measured in the tests at :data:`PMU_DRAWS` = 1000: below 0.02, 0.003 on average
over the likeliest options (about 1 ms per decision among 121 options, its normal CDF an interpolant exact to
1e-13, :func:`_phi`). It is not a default family of a
fit: a fit's likelihood then costs about 1 s per evaluation on the 11 x 11 grid.

Each has a *local* variant (Wu et al. 2018), named with the prefix ``L-``
(``L-UCB``, ...): ``q`` times the inverse Manhattan distance from the option
just observed (the round's previous choice), a distance of 0 counted as 1, so
that people's preference for nearby options enters the value
(:func:`local_weights`). A local family has its base family's parameters and
prior. :data:`FAMILIES` is the default set of a fit (Wu et al. 2020's five);
:data:`REGISTRY` every family the kernel knows.

``published`` evaluates the choice rule as a study's published fitting code
does (for the reproduction of its maximum-likelihood fits; :data:`~ibo_pymc.tasks.gridsearch.rules.RULES`):

* ``"wu2020"`` (also ``True``): q of UCB, mean and variance clamped to
  [0.0001, 100], and the chosen option's probability clamped to
  [1e-5, 0.99999] (without renormalising); EI, PI and PMU are refused (the
  study fitted none of them, and EI and PI divide by a standard deviation that
  its GP makes 0 at an observed option);
* ``"wu2018"`` (the 11 x 11 grid) and ``"wu2018-line"`` (the line of 30): the
  same probability clamps; q of UCB, mean and variance below 0 (the grid) or
  at or below 0 (the line) set to 0.0001 and above 100 set to 100; EI and PI
  with the code's smoothing ``z = (mu - y* + eps) / (s + eps)``,
  ``eps = sqrt(machine epsilon)``; on the line the local variants' distance is
  the code's, shifted by one (:func:`local_weights`).

The Bayesian model uses the plain rule (``published=False``): no clamps, so the density is smooth.

The kernel returns each round's log-likelihood and its gradient in (surrogate
parameter, beta, tau), given the surrogate's derivatives ``dmu``, ``dvar``.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ibo_pymc.tasks.gridsearch.rules import RULES, rule_code
from ibo_pymc.tasks.gridsearch.surrogate import observation_lengths

#: the acquisition functions -> the kernel's code
ACQUISITIONS = {"UCB": 0, "EI": 1, "PI": 2, "mean": 3, "variance": 4, "PMU": 5}
#: a local variant's code: its base family's plus this
LOCAL = 8
#: the prefix of a local variant's name
LOCAL_PREFIX = "L-"
#: every family the kernel knows: name -> code
REGISTRY = {**ACQUISITIONS, **{LOCAL_PREFIX + k: v + LOCAL for k, v in ACQUISITIONS.items()}}
#: the families of a fit by default (Wu et al. 2020's five; name -> code)
FAMILIES = {k: v for k, v in ACQUISITIONS.items() if k != "PMU"}
#: PMU's number of draws, and the seed of its draws (module docstring)
PMU_DRAWS = 1000
PMU_SEED = 2018
#: families with the exploration bonus beta
HAS_BETA = {"UCB", LOCAL_PREFIX + "UCB"}
#: the smoothing of the 2018 code's improvement families: sqrt(machine epsilon)
EPS_2018 = math.sqrt(np.finfo(float).eps)

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)


def family_code(family: str) -> int:
    try:
        return REGISTRY[family]
    except KeyError:
        raise ValueError(f"unknown acquisition family {family!r}; expected one of {', '.join(REGISTRY)}") from None


def base_family(family: str) -> str:
    """The acquisition function of a family: ``"UCB"`` for ``"L-UCB"`` (and for ``"UCB"``)."""
    family_code(family)
    return family.removeprefix(LOCAL_PREFIX)


def is_local(family: str) -> bool:
    return family_code(family) >= LOCAL


def local_weights(options, published=False) -> np.ndarray:
    """The local variants' weights (P, P): row ``i`` is every option's ``1 / d`` from option ``i``, ``d`` the
    Manhattan distance with 0 counted as 1.

    Under ``published="wu2018-line"`` the distance is the 2018 line code's: it compares the options numbered
    1..30 with the previous choice numbered 0..29, so ``d = |j + 1 - i|`` (the option left of the previous
    choice counts as distance 0, the previous choice as 1). Corrected (the default) it is ``|j - i|``.

    Kept on the option set, read-only, per distance (a search evaluates the likelihood tens of thousands of
    times, and building the matrix each time was 2% of a reproduction).
    """
    line = rule_code(published) == RULES["wu2018-line"]
    cache = options.__dict__.setdefault("_local_weights", {})  # a frozen dataclass: its __dict__ holds the cache
    if line not in cache:
        if line:
            idx = np.arange(options.size)
            d = np.abs(idx[None, :] + 1 - idx[:, None])
        else:
            d = options.manhattan
        w = np.ascontiguousarray(1.0 / np.maximum(d, 1), dtype=float)
        w.flags.writeable = False
        cache[line] = w
    return cache[line]


#: the weights a kernel gets when its family is not local (never read)
NO_WEIGHTS = np.ones((1, 1))
#: the draws a kernel gets when its family is not PMU (never read)
NO_DRAWS = np.zeros((1, 1))


@functools.lru_cache(maxsize=8)
def pmu_draws(n_options: int) -> np.ndarray:
    """PMU's fixed standard normal draws (:data:`PMU_DRAWS`, ``n_options``), the same for every fit (seeded by
    :data:`PMU_SEED`); read-only."""
    eps = np.random.default_rng(PMU_SEED).standard_normal((PMU_DRAWS, n_options))
    eps.setflags(write=False)
    return eps


def family_draws(family, n_options: int) -> np.ndarray:
    """What the kernel reads as ``eps`` for ``family`` (a name or a code): PMU's draws, else a placeholder."""
    code = family_code(family) if isinstance(family, str) else int(family)
    return pmu_draws(n_options) if code % LOCAL == ACQUISITIONS["PMU"] else NO_DRAWS


#: PMU's normal CDF (:func:`_phi`): its cubic Hermite interpolant on nodes :data:`PHI_STEP` apart over
#: [-PHI_RANGE, PHI_RANGE] (beyond, 0 and 1 to within 1e-17). The interpolation error is at most
#: ``PHI_STEP**4 / 384`` times the largest fourth derivative of Phi, below 1e-12 (tested against ``erfc``), and a
#: value costs a few multiplications where ``math.erfc`` costs about 25 ns: PMU sums 121,000 of them per
#: decision on the grid.
PHI_STEP, PHI_RANGE = 2.0**-9, 8.5


def _phi_nodes() -> np.ndarray:
    """``(2, N)``: Phi and its derivative phi at the interpolation nodes of :func:`_phi`."""
    from scipy import special

    x = -PHI_RANGE + PHI_STEP * np.arange(int(round(2 * PHI_RANGE / PHI_STEP)) + 1)
    return np.ascontiguousarray(np.vstack([special.ndtr(x), np.exp(-0.5 * x * x) * _INV_SQRT2PI]))


_PHI_NODES = _phi_nodes()


@numba.njit(cache=True, inline="always")
def _phi(a):
    """The standard normal CDF at ``a`` (its interpolant, :data:`PHI_STEP`)."""
    if a <= -PHI_RANGE:
        return 0.0
    if a >= PHI_RANGE:
        return 1.0
    u = (a + PHI_RANGE) / PHI_STEP
    k = int(u)
    t = u - k
    f0 = _PHI_NODES[0, k]
    f1 = _PHI_NODES[0, k + 1]
    d0 = _PHI_NODES[1, k] * PHI_STEP
    d1 = _PHI_NODES[1, k + 1] * PHI_STEP
    return f0 + t * (d0 + t * (3.0 * (f1 - f0) - 2.0 * d0 - d1 + t * (2.0 * (f0 - f1) + d0 + d1)))


@numba.njit(cache=True)
def _pmu(m, v, dm, dv, eps, q, qt, grad):
    """PMU of every option at one decision (module docstring): ``q[j]`` and, with ``grad``, its derivative
    ``qt[j]`` in the surrogate's parameter (else 0), from the options' posterior means ``m``, variances ``v``,
    their derivatives and the fixed draws ``eps`` (S, P)."""
    S, P = eps.shape
    sd = np.empty(P)
    dsd = np.empty(P)
    for i in range(P):
        sd[i] = math.sqrt(v[i])
        dsd[i] = dv[i] / (2.0 * sd[i]) if sd[i] > 0.0 else 0.0
        q[i] = 0.0
        qt[i] = 0.0
    for n in range(S):
        # the largest and second largest draw, and whose they are
        top, second, k1, k2 = -math.inf, -math.inf, 0, 0
        for i in range(P):
            x = m[i] + sd[i] * eps[n, i]
            if x > top:
                second, k2 = top, k1
                top, k1 = x, i
            elif x > second:
                second, k2 = x, i
        for j in range(P):
            mx, k = (second, k2) if j == k1 else (top, k1)
            if sd[j] == 0.0:
                q[j] += 1.0 if m[j] > mx else (0.5 if m[j] == mx else 0.0)
                continue
            a = (m[j] - mx) / sd[j]
            if a < -8.5:  # Phi(a) < 1e-17: nothing to add
                continue
            q[j] += _phi(a)
            if not grad:
                continue
            dmx = dm[k] + dsd[k] * eps[n, k]
            qt[j] += _INV_SQRT2PI * math.exp(-0.5 * a * a) / sd[j] * (dm[j] - dmx - a * dsd[j])
    for j in range(P):
        q[j] /= S
        qt[j] /= S


@numba.njit(cache=True, inline="always")
def _acquisition(
    base, local, mu_t, var_t, dmu_t, dvar_t, best, beta, rule, smooth, wrow, pq, pqt, q, qth, qb, want=True
):
    """One decision's acquisition values ``q`` (P,), their derivatives in the surrogate's parameter ``qth`` and in
    beta ``qb``: the family ``base`` (local: weighted by ``wrow``, the previous choice's row of the local weights)
    under the choice rule's clamps. PMU's values come in ``pq``, ``pqt`` (:func:`_pmu`). Shared by the
    likelihood's kernels and the table's (:func:`choice_loglik_table`).

    One loop over the options per family (EI and PI share one), then the clamps and the local weights in loops of
    their own: a loop whose branches do not change from option to option is one the compiler vectorises (square
    roots and divisions four options at a time); each option's arithmetic is the same either way, so the values
    are too.

    ``want``: whether the derivatives are wanted. A constant where the function is inlined, so that with
    ``False`` (:func:`_loglik_values`) the compiler drops their arithmetic (PI's density, every division by the
    standard deviation's derivative); ``dmu_t``, ``dvar_t`` and ``pqt`` are then not read and ``qth``, ``qb`` are
    left as they were.

    The likelihood's kernels (:func:`_loglik_kernel`, :func:`_loglik_values`, :func:`_round_values`; not the
    table's) divide without Numba's check for a zero divisor (``error_model="numpy"``: the check's branch kept
    these loops from being vectorised): under the plain rule a zero divisor (tau 0; in the gradient tau squared,
    zero for tau below 1.57e-162; EI's and PI's standard deviation 0) gives an infinite or NaN log-likelihood or
    gradient, not a ``ZeroDivisionError``, whichever function calls them (under a published rule tau 0 is
    clamped instead: each decision at log(1e-5) or log(0.99999)); a density that is not finite is rejected where
    it is used (NUTS, the mode's search, the LOO)."""
    P = mu_t.shape[0]
    if base == 0:
        for p in range(P):
            s = math.sqrt(var_t[p])
            q[p] = mu_t[p] + beta * s
            if want:
                ds = dvar_t[p] / (2.0 * s) if s > 0.0 else 0.0
                qth[p] = dmu_t[p] + beta * ds
                qb[p] = s
    elif base == 1 or base == 2:
        for p in range(P):
            s = math.sqrt(var_t[p])
            m = mu_t[p]
            z = (m - best + smooth) / (s + smooth)
            cdf = 0.5 * math.erfc(-z * _INV_SQRT2)
            pdf = 0.0
            if base == 1 or want:
                pdf = _INV_SQRT2PI * math.exp(-0.5 * z * z)
            q[p] = (m - best) * cdf + s * pdf if base == 1 else cdf
            if want:
                ds = dvar_t[p] / (2.0 * s) if s > 0.0 else 0.0
                dm = dmu_t[p]
                dz = dm / (s + smooth) - (m - best + smooth) * ds / ((s + smooth) * (s + smooth))
                # EI: d/dtheta of (m - y*) Phi(z) + s phi(z); the last term vanishes unless smooth > 0
                qth[p] = cdf * dm + pdf * ds + pdf * dz * ((m - best) - s * z) if base == 1 else pdf * dz
                qb[p] = 0.0
    elif base == 3:
        for p in range(P):
            q[p] = mu_t[p]
            if want:
                qth[p] = dmu_t[p]
                qb[p] = 0.0
    elif base == 4:
        for p in range(P):
            s = math.sqrt(var_t[p])
            q[p] = s
            if want:
                qth[p] = dvar_t[p] / (2.0 * s) if s > 0.0 else 0.0
                qb[p] = 0.0
    else:
        add = 0.0001 if rule >= 2 else 0.0  # the 2018 code adds 0.0001 to PMU
        for p in range(P):
            q[p] = pq[p] + add
            if want:
                qth[p] = pqt[p]
                qb[p] = 0.0
    if rule > 0 and (base == 0 or base == 3 or base == 4):
        # the published clamps: below 0.0001 (2020), below 0 (2018 grid), at or below 0 (2018 line)
        for p in range(P):
            qv = q[p]
            if (rule == 1 and qv < 0.0001) or (rule == 2 and qv < 0.0) or (rule == 3 and qv <= 0.0) or qv > 100.0:
                q[p] = 0.0001 if qv <= 100.0 else 100.0
                if want:
                    qth[p] = 0.0
                    qb[p] = 0.0
    if local:
        for p in range(P):
            w = wrow[p]
            q[p] *= w
            if want:
                qth[p] *= w
                qb[p] *= w


#: :func:`_exp_nonpositive`: exp(x) = 2^k exp(r), k the integer nearest x / log 2 (rounded by adding
#: :data:`_ROUND` = 1.5 * 2^52, whose last bits then hold k), r = x - k log 2 in [-log 2 / 2, log 2 / 2] (log 2 in two
#: parts, Cody and Waite), exp(r) its Taylor polynomial of degree 13 (remainder below 1e-17 relative)
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0
_ROUND_BITS = int(np.array([_ROUND]).view(np.int64)[0])
#: below this exp(x) is under 1e-307 (set to 0: it is added to at least 1)
_EXP_FLOOR = -708.0
_TAYLOR = np.array([1.0 / math.factorial(n) for n in range(14)])


@numba.njit(cache=True)
def _exp_nonpositive(x, out, kf, pw):
    """``out[i] = exp(x[i])`` for ``x[i] <= 0`` (0 below :data:`_EXP_FLOOR`, NaN for NaN), within 1 ulp of ``math.exp``
    (tested), in loops LLVM vectorises: ``math.exp`` is a call per element (this llvmlite has no vector math
    library), and the softmax of the choice rule takes one exponential per option and decision: a gradient on the
    8 x 8 grid costs 14% less with this (CHANGELOG). ``kf``, ``pw``: work arrays of ``x``'s length."""
    n = x.shape[0]
    kbits = kf.view(np.int64)
    pbits = pw.view(np.int64)
    for i in range(n):
        xi = _EXP_FLOOR if x[i] <= _EXP_FLOOR else x[i]  # NaN passes (to NaN)
        kf[i] = xi * _LOG2E + _ROUND
    for i in range(n):
        pbits[i] = (kbits[i] - _ROUND_BITS + 1023) << 52  # 2^k
    for i in range(n):
        xi = _EXP_FLOOR if x[i] <= _EXP_FLOOR else x[i]
        k = kf[i] - _ROUND
        r = (xi - k * _LN2_HI) - k * _LN2_LO
        e = _TAYLOR[13]
        for j in range(12, -1, -1):  # Horner's rule (a fixed count: LLVM unrolls it and vectorises over i)
            e = e * r + _TAYLOR[j]
        out[i] = 0.0 if x[i] <= _EXP_FLOOR else e * pw[i]


#: a decision whose (q_chosen - max q) / tau is below this is clamped to log(1e-5) by the published rules whatever
#: the other options: the clamp less a margin (1e-6) far above the rounding of either side (for abs(q) / tau < 1e9)
CLAMP_SURE = math.log(1e-5) - 1e-6
#: a decision for the largest option whose every other term exp((q_p - max q) / tau) sums, at most, below this is
#: clamped to log(0.99999): the sum is then below 1 + 0.9e-5, so lp > -0.9e-5 > log(0.99999) = -1.000005e-5
CLAMP_SURE_HIGH = 0.9e-5


@numba.njit(cache=True, inline="always")
def _top_two(q):
    """The largest of ``q`` and the largest of the others (equal to it where two options tie)."""
    mx = q[0]
    m2 = -math.inf
    for p in range(1, q.shape[0]):
        if q[p] > mx:
            m2 = mx
            mx = q[p]
        elif q[p] > m2:
            m2 = q[p]
    return mx, m2


@numba.njit(cache=True, inline="always")
def _clamp_decides(qc, mx, m2, tau, P):
    """-1 or +1 where the published clamps set a decision's log-probability to log(1e-5) or log(0.99999)
    whatever the sum of its P terms exp((q_p - max q) / tau), the largest of which is 1, so that its P
    exponentials are not needed (:data:`CLAMP_SURE`, :data:`CLAMP_SURE_HIGH`; exact: their margins are far above
    the rounding); 0 where the sum is needed. ``qc`` the chosen option's value, ``mx``, ``m2``
    :func:`_top_two`."""
    if (qc - mx) / tau < CLAMP_SURE:
        return -1
    if qc == mx and (P - 1) * math.exp((m2 - mx) / tau) < CLAMP_SURE_HIGH:
        return 1
    return 0


@numba.njit(cache=True, error_model="numpy")
def _loglik_kernel(mu, var, dmu, dvar, choices, y, lengths, family, beta, tau, rule, wloc, eps, ll, grad):
    """Per round r: ``ll[r]`` and ``grad[r] = d ll[r] / d (theta, beta, tau)`` (theta: the surrogate's parameter).
    ``family`` and ``rule`` are codes (:data:`REGISTRY`, :data:`~.rules.RULES`); ``wloc`` the local weights (P, P) of a
    local family (:func:`local_weights`), ``eps`` PMU's draws (:func:`pmu_draws`)."""
    work = _choice_scratch(mu.shape[2])
    for r in range(mu.shape[0]):
        ll[r], grad[r, 0], grad[r, 1], grad[r, 2] = _round_choices(
            mu[r], var[r], dmu[r], dvar[r], choices[r], y[r], lengths[r], family, beta, tau, rule, wloc, eps, work, True
        )


@numba.njit(cache=True, error_model="numpy")
def _loglik_values(mu, var, choices, y, lengths, family, beta, tau, rule, wloc, eps, ll):
    """``ll[r]`` of :func:`_loglik_kernel` without the gradient, the same values to the bit (its arithmetic is
    theirs; what only the gradient needs is compiled out): what evaluates the likelihood at many draws (bridge
    sampling, the draws' log-likelihood, moment matching in the LOO) uses it, or, a round at a time,
    :func:`_round_values`."""
    work = _choice_scratch(mu.shape[2])
    for r in range(mu.shape[0]):
        ll[r] = _round_values(mu[r], var[r], choices[r], y[r], lengths[r], family, beta, tau, rule, wloc, eps, work)


@numba.njit(cache=True)
def _choice_scratch(P):
    """The work arrays of :func:`_round_choices` for P options (allocated once per evaluation, not per round)."""
    return np.empty((9, P))


@numba.njit(cache=True, error_model="numpy")
def _round_values(mu, var, ch, y, n, family, beta, tau, rule, wloc, eps, work):
    """One round's log-likelihood of :func:`_loglik_values`: ``mu``, ``var`` the posterior before its choices
    (T - 1, P; rows from ``n - 1`` on are not read), ``ch``, ``y`` its choices and rewards (T,), ``n`` its
    observations, ``work`` :func:`_choice_scratch`. The posterior's derivatives are not used (``mu`` and ``var``
    stand in for them)."""
    return _round_choices(mu, var, mu, var, ch, y, n, family, beta, tau, rule, wloc, eps, work, False)[0]


@numba.njit(cache=True, inline="always")
def _round_choices(mu, var, dmu, dvar, ch, y, n, family, beta, tau, rule, wloc, eps, work, want):
    """One round's log-likelihood and, with ``want``, its gradient in (theta, beta, tau): the body of
    :func:`_loglik_kernel` (``want`` True) and :func:`_round_values` (False), inlined into each so that ``want`` is
    a constant there (:func:`_acquisition`). Arguments as :func:`_round_values`'s, with the posterior's
    derivatives ``dmu``, ``dvar``."""
    local = family >= LOCAL
    base = family - LOCAL if local else family
    smooth = EPS_2018 if rule >= 2 else 0.0  # the 2018 code's smoothing of EI and PI
    P = mu.shape[1]
    q, e, qth, qb, pq, pqt = work[0], work[1], work[2], work[3], work[4], work[5]
    tot = 0.0
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    best = y[0]
    for t in range(n - 1):
        if t > 0 and y[t] > best:
            best = y[t]
        c = ch[t + 1]
        prev = ch[t]
        if base == 5 and rule == 3:  # the line code's PMU: each option alone in its draw, so 1 everywhere
            pq[:] = 1.0
            pqt[:] = 0.0
        elif base == 5:
            _pmu(mu[t], var[t], dmu[t], dvar[t], eps, pq, pqt, want)
        w = wloc[prev if local else 0]  # a plain family's weights are a placeholder, never read
        _acquisition(
            base, local, mu[t], var[t], dmu[t], dvar[t], best, beta, rule, smooth, w, pq, pqt, q, qth, qb, want
        )
        mx, m2 = _top_two(q)
        decided = _clamp_decides(q[c], mx, m2, tau, P) if rule > 0 else 0
        if decided:
            tot += math.log(1e-5) if decided < 0 else math.log(0.99999)
            continue
        se = 0.0
        if rule == 0:
            # the published rules keep math.exp: their maxima (the committed reproduction) rest on the last bit
            x = work[6]
            for p in range(P):
                x[p] = (q[p] - mx) / tau
            _exp_nonpositive(x, e, work[7], work[8])
            for p in range(P):
                se += e[p]
        else:
            for p in range(P):
                e[p] = math.exp((q[p] - mx) / tau)
                se += e[p]
        if rule == 0:
            # the difference first: q / tau - (max q / tau + log se) loses |q| / tau ulps (whole nats at
            # tau 1e-17), so a tiny tau scored rounding instead of choices (Wu 2018 2-D participants 31, 55)
            lp = (q[c] - mx) / tau - math.log(se)
        else:
            lp = q[c] / tau - (mx / tau + math.log(se))  # as the committed reproduction was computed
        if rule > 0 and lp < math.log(1e-5):
            tot += math.log(1e-5)
            continue
        if rule > 0 and lp > math.log(0.99999):
            tot += math.log(0.99999)
            continue
        tot += lp
        if not want:
            continue
        # d lp / d q_p = (delta_pc - p_p) / tau ;  d lp / d tau = -(q_c - E_p q) / tau^2
        # the plain rule takes tau's term as E_p (q_p - q_c), the differences first, as lp above (a tie then
        # gives exactly 0 at any tau); the published rules as before (qc = 0 leaves their sums as they were)
        qc = q[c] if rule == 0 else 0.0
        eq = 0.0
        eth = 0.0
        eb = 0.0
        for p in range(P):
            pp = e[p] / se
            eq += pp * (q[p] - qc)
            eth += pp * qth[p]
            eb += pp * qb[p]
        g0 += (qth[c] - eth) / tau
        g1 += (qb[c] - eb) / tau
        g2 += -((q[c] - qc) - eq) / (tau * tau)
    return tot, g0, g1, g2


@numba.njit(cache=True)
def _table_kernel(mu, var, choices, y, lengths, family, betas, taus, rule, wloc, eps, out):
    """``out[i, j, r]``: round r's log-likelihood at ``(betas[i], taus[j])``, the value of :func:`_loglik_kernel`
    without its gradient. A decision's acquisition values are computed once per beta and serve every tau."""
    local = family >= LOCAL
    base = family - LOCAL if local else family
    smooth = EPS_2018 if rule >= 2 else 0.0
    R = mu.shape[0]
    P = mu.shape[2]
    q = np.empty(P)
    qth = np.empty(P)
    qb = np.empty(P)
    pq = np.empty(P)
    pqt = np.empty(P)
    zeros = np.zeros(P)
    lo = math.log(1e-5)
    hi = math.log(0.99999)
    out[:] = 0.0
    for r in range(R):
        best = y[r, 0]
        for t in range(lengths[r] - 1):
            if t > 0 and y[r, t] > best:
                best = y[r, t]
            c = choices[r, t + 1]
            prev = choices[r, t]
            if base == 5 and rule == 3:  # as in _loglik_kernel
                pq[:] = 1.0
                pqt[:] = 0.0
            elif base == 5:
                _pmu(mu[r, t], var[r, t], zeros, zeros, eps, pq, pqt, False)
            w = wloc[prev if local else 0]
            for i in range(betas.shape[0]):
                _acquisition(
                    base, local, mu[r, t], var[r, t], zeros, zeros, best, betas[i], rule, smooth, w, pq, pqt, q, qth, qb
                )
                mx, m2 = _top_two(q)
                for j in range(taus.shape[0]):
                    tau = taus[j]
                    decided = _clamp_decides(q[c], mx, m2, tau, P) if rule > 0 else 0
                    if decided:
                        out[i, j, r] += lo if decided < 0 else hi
                        continue
                    se = 0.0
                    for p in range(P):
                        se += math.exp((q[p] - mx) / tau)
                    lp = (q[c] - mx) / tau - math.log(se)
                    if rule > 0 and lp < lo:
                        lp = lo
                    elif rule > 0 and lp > hi:
                        lp = hi
                    out[i, j, r] += lp


def choice_loglik_table(post, choices, y, family, betas, taus, *, lengths=None, published=False, options=None):
    """Each round's log-likelihood (as :func:`choice_loglik`, without the gradient) on the grid ``betas x taus``:
    ``(B, T, R)``. ``post``'s derivatives are not needed (``(mu, var)`` or the full tuple). For a family without
    beta, pass one beta (any value). What a tabulated search (:mod:`.mle_tabulated`) calls: the acquisition
    values of a decision are computed once per beta, so a family without beta, PMU included, pays for them
    once for all taus."""
    from ibo_pymc.tasks.gridsearch.options import GRID_8X8

    code = family_code(family) if isinstance(family, str) else int(family)
    rule = rule_code(published)
    if rule == RULES["wu2020"] and code % LOCAL in (ACQUISITIONS["EI"], ACQUISITIONS["PI"], ACQUISITIONS["PMU"]):
        raise ValueError("the 2020 published choice rule applies to UCB, mean and variance, not EI, PI or PMU")
    mu, var = np.ascontiguousarray(post[0], dtype=float), np.ascontiguousarray(post[1], dtype=float)
    wloc = local_weights(options or GRID_8X8, published) if code >= LOCAL else NO_WEIGHTS
    choices = np.ascontiguousarray(choices, dtype=np.int64)
    betas = np.ascontiguousarray(np.atleast_1d(betas), dtype=float)
    taus = np.ascontiguousarray(np.atleast_1d(taus), dtype=float)
    out = np.empty((len(betas), len(taus), choices.shape[0]))
    _table_kernel(
        mu,
        var,
        choices,
        np.ascontiguousarray(y, dtype=float),
        observation_lengths(choices, lengths),
        code,
        betas,
        taus,
        rule,
        wloc,
        family_draws(code, mu.shape[2]),
        out,
    )
    return out


def choice_loglik(post, choices, y, family, beta, tau, *, lengths=None, published=False, options=None):
    """Each round's log-likelihood of the choices 2..T and its gradient in (theta, beta, tau).

    ``post`` is a surrogate's ``(mu, var, dmu, dvar)``; returns ``(ll (R,), grad (R, 3))``. ``published``: the
    choice rule (module docstring; ``"wu2020"``/``True`` refuses EI, PI and PMU, local or not).
    ``options`` (an :class:`~ibo_pymc.tasks.gridsearch.options.OptionSet`): where the local families measure
    distances (default the 8 x 8 grid).
    """
    from ibo_pymc.tasks.gridsearch.options import GRID_8X8

    code = family_code(family) if isinstance(family, str) else int(family)
    rule = rule_code(published)
    if rule == RULES["wu2020"] and code % LOCAL in (ACQUISITIONS["EI"], ACQUISITIONS["PI"], ACQUISITIONS["PMU"]):
        raise ValueError("the 2020 published choice rule applies to UCB, mean and variance, not EI, PI or PMU")
    mu, var, dmu, dvar = post
    wloc = local_weights(options or GRID_8X8, published) if code >= LOCAL else NO_WEIGHTS
    if code >= LOCAL and wloc.shape[0] != mu.shape[2]:
        raise ValueError(f"the posterior has {mu.shape[2]} options, the option set {wloc.shape[0]}")
    choices = np.ascontiguousarray(choices, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=float)
    R = choices.shape[0]
    lengths = observation_lengths(choices, lengths)
    ll = np.empty(R)
    grad = np.empty((R, 3))
    eps = family_draws(code, mu.shape[2])
    _loglik_kernel(mu, var, dmu, dvar, choices, y, lengths, code, float(beta), float(tau), rule, wloc, eps, ll, grad)
    return ll, grad


def pmu_values(mu, var) -> np.ndarray:
    """PMU of every option (last axis) for arrays of posteriors: the kernel's estimate (module docstring)."""
    mu = np.asarray(mu, float)
    var = np.broadcast_to(np.asarray(var, float), mu.shape)
    P = mu.shape[-1]
    m2, v2 = mu.reshape(-1, P), var.reshape(-1, P)
    out, scratch, zeros = np.empty_like(m2), np.empty(P), np.zeros(P)
    for k in range(len(m2)):
        _pmu(
            np.ascontiguousarray(m2[k]), np.ascontiguousarray(v2[k]), zeros, zeros, pmu_draws(P), out[k], scratch, False
        )
    return out.reshape(mu.shape)


def choice_probabilities(mu, var, best, family, beta, tau, *, weights=None):
    """Softmax choice probabilities over the options (last axis) for arrays of posteriors (NumPy; plain rule).
    ``weights``: for a local family, the local weights from each decision's previous choice (same shape as
    ``mu``; a row of :func:`local_weights`)."""
    from scipy import special, stats

    s = np.sqrt(var)
    best = np.asarray(best, float)
    base = base_family(family)
    if base == "UCB":
        q = mu + beta * s
    elif base in ("EI", "PI"):
        z = (mu - best[..., None]) / s
        q = (mu - best[..., None]) * stats.norm.cdf(z) + s * stats.norm.pdf(z) if base == "EI" else stats.norm.cdf(z)
    elif base == "mean":
        q = mu
    elif base == "variance":
        q = s
    else:
        q = pmu_values(mu, var)
    if is_local(family):
        if weights is None:
            raise ValueError(f"{family}: a local family needs the weights of the previous choice (local_weights)")
        q = q * weights
    return special.softmax(q / tau, axis=-1)
