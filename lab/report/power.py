"""Power of the comparison tests, and the smallest change they detect (SPEC K8).

Pure standard library (``math``, ``statistics.NormalDist``), so a report can
state its detectable change without loading scipy; the public face is
:mod:`lab.compare.power`. Two tests are modelled, the ones ``lab compare`` uses:

- **per task**, Fisher's exact test (two-sided, the "minimum likelihood"
  p-value of scipy's ``fisher_exact``): its power is computed *exactly* by
  enumerating every pair of outcomes (c_base, c_cand) and summing the
  binomial probabilities of the tables it rejects (the rejection region
  depends only on the sample sizes and α);
- **aggregate**, the stratified permutation (exact conditional) test of the
  task-weighted mean difference (:mod:`lab.compare.inference`): its power
  models the test conditionally on each task's success total: the test
  compares D with its own null spread given the totals, which is random and
  moves with D (a task whose runs all pass or all fail adds nothing to
  either); a continuity-corrected normal test on that conditional variance,
  its probability from exact cumulants and an Edgeworth term
  (:func:`aggregate_power`). Measured against simulation of the exact test
  (benchmarks/compare_error_rates.py, table in docs/compare.md).

Sources: R. A. Fisher (1935), *The Design of Experiments*, §2 (the exact test);
D. R. Cox (1970), *The Analysis of Binary Data*, §4 (conditioning on the totals);
J. L. Fleiss, A. Tytun, H. K. Ury (1980), "A simple approximation for
calculating sample sizes for comparing independent proportions",
Biometrics 36:343–346 (continuity correction); J. Cohen (1988), *Statistical
Power Analysis*, ch. 6 (power of a two-proportion z test); P. Hall (1992),
*The Bootstrap and Edgeworth Expansion*, §2.2 (the Edgeworth tail).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from statistics import NormalDist

from lab.report.fisher_power import check_sizes
from lab.report.fisher_power import fisher_power as fisher_power  # re-exported
from lab.report.fisher_power import fisher_region as fisher_region  # re-exported

EXACT_RUNS_MAX = 80
"""Largest runs per side for which per-task sample sizes are searched with the exact Fisher power."""
RUNS_CAP = 100_000
"""Largest k any sample-size function returns; beyond it the answer is this cap."""

_N = NormalDist()
_NEGLIGIBLE_VAR = 1e-24
"""A variance of D below this (a standard deviation of 1e-12) is treated as none."""


def _toward(rate: float, delta: float, up: bool) -> float | None:
    q = rate + delta if up else rate - delta
    return q if -1e-12 <= q <= 1 + 1e-12 else None


def _solve(f: Callable[[float], float], cap: float, target: float) -> float:
    """Smallest delta in (0, cap] with f(delta) >= target (bisection); inf when none."""
    if cap <= 0 or f(cap) < target:
        return math.inf
    lo, hi = 0.0, cap
    for _ in range(24):  # 2^-24 of the range: far below any difference a report prints
        mid = (lo + hi) / 2
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


@cache
def task_detectable(rate: float, n_base: int, n_cand: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest change of one task's rate that Fisher's test detects with the given power.

    Exact power up to :data:`EXACT_RUNS_MAX` runs a side; beyond, the
    continuity-corrected normal approximation (one stratum of
    :func:`aggregate_power`). Both directions from ``rate`` are tried (up to 1, down to 0); the answer
    is the larger of the two smallest detectable changes among the
    directions where one exists (the harder direction decides), ``inf`` when
    no change in either direction reaches the power.
    """
    _check_rate(rate)
    check_sizes(n_base, n_cand, alpha)
    exact = max(n_base, n_cand) <= EXACT_RUNS_MAX
    found = []
    for up in (True, False):
        cap = (1.0 - rate) if up else rate

        def at(d: float, up: bool = up) -> float:
            q = _toward(rate, d, up)
            if q is None:
                return 0.0
            q = min(1.0, max(0.0, q))
            if exact:
                return fisher_power(rate, q, n_base, n_cand, alpha=alpha)
            return aggregate_power([rate], [q], [n_base], [n_cand], alpha=alpha)  # one stratum: normal, corrected

        found.append(_solve(at, cap, power))
    finite = [d for d in found if math.isfinite(d)]
    return max(finite) if finite else math.inf


def task_runs(rate: float, delta: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per side for Fisher's test to detect ``rate`` → ``rate + delta`` with the given power.

    When ``rate + delta`` leaves [0, 1] the change ``rate − delta`` is used.
    Up to :data:`EXACT_RUNS_MAX` runs the smallest n whose exact power reaches
    the target; beyond, the continuity-corrected normal sample size
    (Fleiss, Tytun & Ury 1980). Capped at :data:`RUNS_CAP`.

    Raises:
        ValueError: rate outside [0, 1], delta 0 or neither change inside [0, 1].
    """
    _check_rate(rate)
    q = rate + delta if 0 <= rate + delta <= 1 else rate - delta
    if delta == 0 or not 0 <= q <= 1:
        raise ValueError(f"no change of {delta!r} from rate {rate!r} stays within [0, 1]")
    z_a, z_b = _N.inv_cdf(1 - alpha / 2), _N.inv_cdf(power)
    pbar, d = (rate + q) / 2, abs(q - rate)
    n0 = (z_a * math.sqrt(2 * pbar * (1 - pbar)) + z_b * math.sqrt(rate * (1 - rate) + q * (1 - q))) ** 2 / d ** 2
    n_cc = n0 / 4 * (1 + math.sqrt(1 + 4 / (n0 * d))) ** 2 if n0 > 0 else 1.0
    if n_cc > EXACT_RUNS_MAX * 1.5:
        return min(RUNS_CAP, math.ceil(n_cc))
    for n in range(2, EXACT_RUNS_MAX + 1):
        if fisher_power(rate, q, n, n, alpha=alpha) >= power:
            return n
    return min(RUNS_CAP, max(EXACT_RUNS_MAX + 1, math.ceil(n_cc)))


# --- aggregate -------------------------------------------------------------------------------

def aggregate_power(rates_base: Sequence[float], rates_cand: Sequence[float], n_base: Sequence[int],
                    n_cand: Sequence[int], *, alpha: float = 0.05) -> float:
    """Predicted power of the stratified permutation test of the mean difference D (conditional variance, Edgeworth).

    Args:
        rates_base, rates_cand: true rates per task, in [0, 1] (same length T >= 1).
        n_base, n_cand: judged runs per task and side (>= 1).
        alpha: two-sided level.

    Returns:
        P(D − h ≥ z·σ0(s)) + P(−D − h ≥ z·σ0(s)), a probability in [0, 1], where
        σ0(s)² = V = Σ_i a_i² s_i(N_i − s_i) n_b n_c / (N_i²(N_i − 1)) is the test's own null
        variance given each task's success total s_i (a_i = (1/n_b + 1/n_c)/T, N_i = n_b + n_c),
        h = half the lattice step mean(1/n_b + 1/n_c)/(2T), z = Φ⁻¹(1 − α/2). V is random
        and moves with D (a task whose runs all pass or all fail adds nothing to either), so
        √V is replaced by its tangent at m = E[V], (m + V)/(2√m); each side is then a sum over
        tasks of the polynomial ±d_i − z·v_i/(2√m) of the binomial counts, whose first three
        cumulants are exact (binomial central moments up to order 6), and its tail is the
        one-term Edgeworth expansion 1 − Φ(x) + φ(x)·γ(x² − 1)/6. 0 when no task can vary.
        Measured against simulation of the exact test (benchmarks/compare_error_rates.py).

    Raises:
        ValueError: empty or unequal sequences, a side with no run, alpha outside (0, 1).

    Sources: conditioning on the margins as in Cox (1970), *The Analysis of Binary
    Data*, §4; the continuity correction as in Fleiss, Tytun & Ury (1980); the Edgeworth
    expansion as in P. Hall (1992), *The Bootstrap and Edgeworth Expansion*, §2.2.
    """
    t = len(rates_base)
    if not t or not len(rates_cand) == len(n_base) == len(n_cand) == t:
        raise ValueError("aggregate_power: rates and run counts must be non-empty and of one length")
    z = _N.inv_cdf(1 - alpha / 2) if 0 < alpha < 1 else 0.0
    groups: dict[tuple[float, float, int, int], int] = {}
    for key in zip(rates_base, rates_cand, n_base, n_cand, strict=True):
        check_sizes(key[2], key[3], alpha)
        _check_rate(key[0])
        _check_rate(key[1])
        groups[key] = groups.get(key, 0) + 1
    m = half = 0.0
    tasks = []
    for (pb, pc, nb, nc), count in groups.items():
        n = nb + nc
        g = ((1 / nb + 1 / nc) / t) ** 2 * nb * nc / (n * n * (n - 1))  # v_i = g·s(n − s)
        mb, mc = _central_moments(nb, pb), _central_moments(nc, pc)
        mean_s, var_s = nb * pb + nc * pc, mb[2] + mc[2]
        mean_v = g * (n * mean_s - mean_s ** 2 - var_s)
        m += count * mean_v
        half += count * (1 / nb + 1 / nc) / t / t / 2
        tasks.append((count, pb, pc, nb, nc, g * (n - 2 * mean_s), g, mean_v, _mixed_moments(mb, mc)))
    if m <= _NEGLIGIBLE_VAR:  # no task can vary (far below any lattice step): the test never rejects
        return 0.0
    lam = z / (2 * math.sqrt(m))
    threshold = half + z * math.sqrt(m) / 2
    total = 0.0
    for sign in (1.0, -1.0):
        k1 = k2 = k3 = 0.0
        for count, pb, pc, nb, nc, lin, g, mean_v, e in tasks:
            # centred u = ±d − λv = A·x_b + B·x_c + C·(w² − E w²) in the centred counts, w = x_b + x_c
            a, b, c = -sign / (nb * t) - lam * lin, sign / (nc * t) - lam * lin, lam * g
            k1 += count * (sign * (pc - pb) / t - lam * mean_v)
            k2 += count * (a * a * e[0] + b * b * e[1] + c * c * e[2] + 2 * a * c * e[3] + 2 * b * c * e[4])
            k3 += count * (a ** 3 * e[3] + b ** 3 * e[4] + c ** 3 * e[5] + 3 * a * a * c * e[6]
                           + 3 * b * b * c * e[7] + 12 * a * b * c * e[0] * e[1] + 3 * a * c * c * e[8]
                           + 3 * b * c * c * e[9])
        if k2 <= _NEGLIGIBLE_VAR:
            total += 1.0 if k1 >= threshold else 0.0
            continue
        x = (threshold - k1) / math.sqrt(k2)
        tail = 1 - _N.cdf(x) + _N.pdf(x) * k3 / k2 ** 1.5 * (x * x - 1) / 6
        total += min(1.0, max(0.0, tail))
    return min(1.0, total)


@cache
def _central_moments(n: int, p: float) -> tuple[float, ...]:
    """E[(X − np)^r], r = 0..6, of X ~ Binomial(n, p), from its cumulants n·κ_r (Kendall & Stuart, §3.12).

    Bernoulli cumulants with v = p(1 − p): κ₂ = v, κ₃ = v(1 − 2p), κ₄ = v(1 − 6v),
    κ₅ = v(1 − 2p)(1 − 12v), κ₆ = v(1 − 30v + 120v²).
    """
    v, d = p * (1 - p), 1 - 2 * p
    k2, k3, k4 = n * v, n * v * d, n * v * (1 - 6 * v)
    k5, k6 = n * v * d * (1 - 12 * v), n * v * (1 - 30 * v + 120 * v * v)
    return (1.0, 0.0, k2, k3, k4 + 3 * k2 * k2, k5 + 10 * k3 * k2, k6 + 15 * k4 * k2 + 10 * k3 * k3 + 15 * k2 ** 3)


def _mixed_moments(b: Sequence[float], c: Sequence[float]) -> tuple[float, ...]:
    """Moments of x_b, x_c (independent, centred, central moments b, c) and e = (x_b + x_c)² − S, S = b₂ + c₂.

    Returns (E x_b², E x_c², E e², E x_b³, E x_c³, E e³, E x_b²e, E x_c²e, E x_b e², E x_c e²); with
    E x_b e = b₃, E x_c e = c₃ and E x_b x_c e = 2b₂c₂ the first and third cumulants of
    A·x_b + B·x_c + C·e follow (odd moments of one variable times 1 of the other vanish).
    """
    sq = b[2] + c[2]
    w4 = b[4] + 6 * b[2] * c[2] + c[4]
    w6 = b[6] + 15 * b[4] * c[2] + 20 * b[3] * c[3] + 15 * b[2] * c[4] + c[6]
    return (b[2], c[2], w4 - sq * sq, b[3], c[3], w6 - 3 * sq * w4 + 2 * sq ** 3, b[4] - b[2] ** 2,
            c[4] - c[2] ** 2, b[5] + 6 * b[3] * c[2] + 4 * b[2] * c[3] - 2 * sq * b[3],
            c[5] + 6 * c[3] * b[2] + 4 * c[2] * b[3] - 2 * sq * c[3])


def _shifted(rates: Sequence[float], delta: float, up: bool) -> list[float]:
    return [min(1.0, r + delta) if up else max(0.0, r - delta) for r in rates]


def aggregate_detectable(rates: Sequence[float], n_base: Sequence[int], n_cand: Sequence[int], *,
                         alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest shift δ of every task's rate (clipped to [0, 1]) the aggregate test detects with ``power``.

    Both directions are tried; the harder one among those that can reach the
    power decides; ``inf`` when neither can.
    """
    for r in rates:
        _check_rate(r)
    found = []
    for up in (True, False):
        def at(d: float, up: bool = up) -> float:
            return aggregate_power(rates, _shifted(rates, d, up), n_base, n_cand, alpha=alpha)

        found.append(_solve(at, 1.0, power))
    finite = [d for d in found if math.isfinite(d)]
    return max(finite) if finite else math.inf


def aggregate_runs(rates: Sequence[float], delta: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per task and side (the same k everywhere) for the aggregate test to detect a shift of ``delta``.

    Every task's rate moves by ``delta`` (clipped to [0, 1]); a negative delta
    is a fall; when no task can move that way (all at the bound) the
    opposite direction is used. Capped at :data:`RUNS_CAP`.

    Raises:
        ValueError: no rates, a rate outside [0, 1], or delta 0.
    """
    if not rates or delta == 0:
        raise ValueError("aggregate_runs: need at least one rate and a non-zero delta")
    for r in rates:
        _check_rate(r)
    t = len(rates)
    cand = _shifted(rates, abs(delta), delta > 0)
    if all(c == r for r, c in zip(rates, cand, strict=True)):  # every task at the bound: only the other way
        cand = _shifted(rates, abs(delta), delta < 0)
    shift = abs(sum(c - r for r, c in zip(rates, cand, strict=True))) / t
    # With k runs on both sides: σ0 = a0/√k, σ1 = a1/√k, h = c/k; power ≥ target when
    # c·u² + (z_α·a0 + z_β·a1)·u − shift ≤ 0 with u = 1/√k (the far tail neglected).
    a0 = math.sqrt(sum(2 * ((r + c) / 2) * (1 - (r + c) / 2) for r, c in zip(rates, cand, strict=True))) / t
    a1 = math.sqrt(sum(r * (1 - r) + c * (1 - c) for r, c in zip(rates, cand, strict=True))) / t
    h = 1 / t
    z_a, z_b = _N.inv_cdf(1 - alpha / 2), _N.inv_cdf(power)
    b = z_a * a0 + z_b * a1
    if shift <= 0:
        return RUNS_CAP
    u = (-b + math.sqrt(b * b + 4 * h * shift)) / (2 * h)
    k = min(RUNS_CAP, max(1, math.ceil(1 / (u * u)))) if u > 0 else RUNS_CAP

    def enough(n: int) -> bool:
        return aggregate_power(rates, cand, [n] * t, [n] * t, alpha=alpha) >= power

    while k < RUNS_CAP and not enough(k):
        k += 1
    while k > 1 and enough(k - 1):
        k -= 1
    return k


EQUIVALENCE_MIN_RUNS = 5
"""The fewest runs per task and side a comparison draws a conclusion from (fewer: *low power*)."""


def equivalence_runs(rates: Sequence[float], observed: float, tolerance: float) -> int | None:
    """Runs per task and side for the aggregate 95 % interval to fit inside ±tolerance around ``observed``.

    The interval of :mod:`lab.compare.inference`: half-width z·√(Σ 2·v)/T with
    v = p̃(1 − p̃)/(k − 1) and p̃ = (p·k + 1)/(k + 2), the Agresti–Caffo
    adjusted rate, so a task that passed (or failed) every run still adds
    variance. Never below :data:`EQUIVALENCE_MIN_RUNS`; None when |observed|
    is not below the tolerance (no k shows equivalence then).
    """
    room = tolerance - abs(observed)
    if room <= 0 or not rates:
        return None
    z = _N.inv_cdf(0.975)

    def fits(k: int) -> bool:
        var = sum(2 * ((r * k + 1) / (k + 2)) * (1 - (r * k + 1) / (k + 2)) / (k - 1) for r in rates)
        return z * math.sqrt(var) / len(rates) <= room

    low, high = EQUIVALENCE_MIN_RUNS, EQUIVALENCE_MIN_RUNS
    while not fits(high):  # the half-width shrinks as k grows: double, then bisect
        if high >= RUNS_CAP:
            return RUNS_CAP
        low, high = high + 1, min(RUNS_CAP, 2 * high)
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid + 1, high)
    return high


def _check_rate(rate: float) -> None:
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
