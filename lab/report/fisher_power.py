"""Exact power of Fisher's exact test for one task (SPEC K8): the per-task half of :mod:`lab.report.power`.

Fisher's exact test (two-sided, the "minimum likelihood" p-value of scipy's
``fisher_exact``) rejects a set of tables (c_base, c_cand) that depends only
on the sample sizes and α (:func:`fisher_region`); its power at given rates is
the binomial probability of that set (:func:`fisher_power`), summed exactly.
Pure standard library, so a report can state it without loading scipy.

Source: R. A. Fisher (1935), *The Design of Experiments*, §2.
"""

from __future__ import annotations

import bisect
import math
from functools import cache


def _binom_pmf(n: int, p: float) -> list[float]:
    if p <= 0.0:
        return [1.0] + [0.0] * n
    if p >= 1.0:
        return [0.0] * n + [1.0]
    lp, lq = math.log(p), math.log1p(-p)
    return [math.exp(lc + x * lp + (n - x) * lq) for x, lc in enumerate(_log_comb(n))]


@cache
def _log_comb(n: int) -> tuple[float, ...]:
    """log C(n, x) for x = 0..n."""
    return tuple(math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in range(n + 1))


@cache
def fisher_region(n_base: int, n_cand: int, alpha: float) -> frozenset[tuple[int, int]]:
    """The tables (c_base, c_cand) that Fisher's two-sided exact test rejects at level ``alpha``.

    The p-value of a table is the sum of the hypergeometric probabilities (given
    the successes s = c_base + c_cand) of every table no more probable than it,
    with scipy's relative tolerance of 1e-7 for ties; computed in exact integers.

    Raises:
        ValueError: a side with fewer than 1 run, or alpha outside (0, 1).
    """
    check_sizes(n_base, n_cand, alpha)
    region = set()
    for s in range(n_base + n_cand + 1):
        lo, hi = max(0, s - n_base), min(s, n_cand)
        weights = [math.comb(n_cand, x) * math.comb(n_base, s - x) for x in range(lo, hi + 1)]
        total = math.comb(n_base + n_cand, s)
        ordered = sorted(weights)
        cumulative = [0]
        for w in ordered:
            cumulative.append(cumulative[-1] + w)
        for offset, w in enumerate(weights):
            # every table with weight <= w * (1 + 1e-7), in integers
            at_most = bisect.bisect_right(ordered, w + w // 10_000_000)
            if cumulative[at_most] <= alpha * total:
                x = lo + offset
                region.add((s - x, x))
    return frozenset(region)


@cache
def _region_runs(n_base: int, n_cand: int, alpha: float) -> tuple[tuple[int, tuple[tuple[int, int], ...]], ...]:
    """The rejection region as, per c_base, the maximal runs [first, last] of rejected c_cand."""
    rows: dict[int, list[int]] = {}
    for b, c in fisher_region(n_base, n_cand, alpha):
        rows.setdefault(b, []).append(c)
    out = []
    for b, cs in sorted(rows.items()):
        cs.sort()
        runs, start = [], cs[0]
        for prev, cur in zip(cs, cs[1:], strict=False):
            if cur != prev + 1:
                runs.append((start, prev))
                start = cur
        runs.append((start, cs[-1]))
        out.append((b, tuple(runs)))
    return tuple(out)


def fisher_power(rate_base: float, rate_cand: float, n_base: int, n_cand: int, *, alpha: float = 0.05) -> float:
    """Exact power of Fisher's two-sided test: P(reject) when the true rates are the two given.

    Args:
        rate_base, rate_cand: true success rates in [0, 1].
        n_base, n_cand: judged runs per side (>= 1).
        alpha: level of the test.

    Returns:
        The probability in [0, 1] that the test rejects.
    """
    pb, pc = _binom_pmf(n_base, rate_base), _binom_pmf(n_cand, rate_cand)
    cumulative = [0.0]
    for q in pc:
        cumulative.append(cumulative[-1] + q)
    total = sum(pb[b] * sum(cumulative[last + 1] - cumulative[first] for first, last in runs)
                for b, runs in _region_runs(n_base, n_cand, alpha))
    return min(1.0, max(0.0, total))


def check_sizes(n_base: int, n_cand: int, alpha: float) -> None:
    if n_base < 1 or n_cand < 1:
        raise ValueError(f"runs per side must be >= 1, got {n_base} and {n_cand}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
