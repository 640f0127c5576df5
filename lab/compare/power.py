"""Power and sample size of a difference of success rates, per task and for the suite (SPEC K8).

Normal approximation for a difference of two independent proportions
(Fleiss, Levin & Paik, *Statistical Methods for Rates and Proportions*, 3rd ed.
2003, §4.2, without continuity correction), two-sided at level ``alpha``:
a change ``delta`` from rate ``p`` is detected with power ``1 − β`` when

    delta = (z_{1−α/2} + z_{1−β}) · sqrt(v(p, delta))

with ``v = p(1−p)/n_base + p'(1−p')/n_cand`` and ``p' = p + delta`` (or
``p − delta`` when ``p + delta`` exceeds 1), so a task at 0 or 1 still has
the variance of the rate it would move to.

The suite's figure is the task-weighted mean difference, stratified by task
(tasks are strata, runs within a task independent): its variance is the sum
of the per-task variances divided by T², T the number of tasks.

All rates, differences and powers are fractions in [0, 1]; run counts are
runs per side (one variant).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

_N = NormalDist()


def _check(alpha: float, power: float) -> float:
    """z_{1−α/2} + z_{power}; raises ValueError outside 0 < alpha < 1, 0 < power < 1."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    return _N.inv_cdf(1 - alpha / 2) + _N.inv_cdf(power)


def _moved(rate: float, delta: float) -> float:
    return rate + delta if rate + delta <= 1 else max(0.0, rate - delta)


def _variance_terms(rate: float, delta: float) -> tuple[float, float]:
    """(p(1−p), p'(1−p')): the Bernoulli variance of a run before and after the change."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
    moved = _moved(rate, delta)
    return rate * (1 - rate), moved * (1 - moved)


def _solve(z: float, se: Callable[[float], float]) -> float:
    """The smallest delta in (0, 1] with z · se(delta) ≤ delta (bisection; 1.0 when none)."""
    lo, hi = 0.0, 1.0
    if z * se(hi) > hi:
        return 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if z * se(mid) <= mid:
            hi = mid
        else:
            lo = mid
    return hi


def task_detectable_difference(rate: float, n_base: int, n_cand: int, *, alpha: float = 0.05,
                               power: float = 0.8) -> float:
    """The smallest change of one task's success rate detected with ``power`` at two-sided ``alpha``.

    Args:
        rate: the task's success rate on the base side, in [0, 1].
        n_base, n_cand: judged runs on each side (≥ 1).

    Returns:
        A fraction in (0, 1]; 1.0 when no change up to 1 is detectable.

    Raises:
        ValueError: a rate outside [0, 1], a run count below 1, alpha or power outside (0, 1).
    """
    z = _check(alpha, power)
    if n_base < 1 or n_cand < 1:
        raise ValueError(f"run counts must be at least 1, got {n_base!r} and {n_cand!r}")

    def se(delta: float) -> float:
        vb, vc = _variance_terms(rate, delta)
        return math.sqrt(vb / n_base + vc / n_cand)

    return _solve(z, se)


def aggregate_detectable_difference(rates: Sequence[float], n_base: Sequence[int], n_cand: Sequence[int], *,
                                    alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest change of the task-weighted mean success rate detected with ``power`` at ``alpha``.

    The same change ``delta`` is assumed on every task (stratified by task).

    Args:
        rates: each task's base success rate; ``n_base``, ``n_cand``: its judged runs per side.

    Returns:
        A fraction in (0, 1].

    Raises:
        ValueError: no task, sequences of different lengths, or a value out of range.
    """
    z = _check(alpha, power)
    if not rates or not len(rates) == len(n_base) == len(n_cand):
        raise ValueError("rates, n_base and n_cand must be non-empty and of the same length")
    if min(n_base) < 1 or min(n_cand) < 1:
        raise ValueError("run counts must be at least 1")
    tasks = len(rates)

    def se(delta: float) -> float:
        total = 0.0
        for rate, nb, nc in zip(rates, n_base, n_cand, strict=True):
            vb, vc = _variance_terms(rate, delta)
            total += vb / nb + vc / nc
        return math.sqrt(total) / tasks

    return _solve(z, se)


def task_runs_for_difference(rate: float, delta: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per side for one task to detect a change ``delta`` of its rate ``rate``.

    Returns:
        n ≥ 1 (equal runs on both sides).

    Raises:
        ValueError: delta outside (0, 1), rate outside [0, 1], alpha or power outside (0, 1).
    """
    z = _check(alpha, power)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    vb, vc = _variance_terms(rate, delta)
    return max(1, math.ceil(z * z * (vb + vc) / (delta * delta) - 1e-9))


def runs_per_task_for_difference(rates: Sequence[float], delta: float, *, alpha: float = 0.05,
                                 power: float = 0.8) -> int:
    """Runs per task and side (k) for the suite's task-weighted mean difference to detect ``delta``.

    Returns:
        k ≥ 1.

    Raises:
        ValueError: no task, delta outside (0, 1), a rate outside [0, 1], alpha or power outside (0, 1).
    """
    z = _check(alpha, power)
    if not rates:
        raise ValueError("no task rates")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    total = sum(sum(_variance_terms(rate, delta)) for rate in rates)
    return max(1, math.ceil(z * z * total / (len(rates) ** 2 * delta * delta) - 1e-9))
