"""The verdicts of a live comparison from counts alone (SPEC K6, K7): per task and for the aggregate.

Input: one :class:`~lab.compare.inference.Stratum` per *paired* task (judged
runs on both sides). No report documents here, so the simulation of error
rates (tests, ``benchmarks/compare_error_rates.py``) runs the very code
``compare_reports`` runs.

Per task (K7): the difference cand − base with Newcombe's 95 % interval,
Fisher's exact two-sided p-value, and the Holm-adjusted p-value across the
paired tasks of the comparison. *improved* / *regressed* when the adjusted p
is at most α (in the direction of the difference), else *inconclusive*.
A task **lost reliability** exactly when it is *regressed*: a significant
loss after the correction. A raw pass^k dip is shown, never a verdict.

Aggregate (K6), over the paired tasks, D = mean(p_cand − p_base), its 95 %
interval and the stratified permutation p-value; in order:

1. *improved* — p <= α, D > tolerance, and no task lost reliability;
2. *mixed* — p <= α, D > tolerance, but some task lost reliability;
3. *regressed* — p <= α and D < 0;
4. *unchanged* — the whole interval lies strictly inside ±tolerance
   (equivalence) and no task lost reliability;
5. *inconclusive* — otherwise, saying why and which k per task would decide.

A significant rise no larger than the tolerance is not an improvement (the
tolerance is the smallest change that matters): it is *unchanged* when the
interval lies inside the band, else *inconclusive*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lab.compare.inference import AggregateTest, Stratum, fisher_p, holm, newcombe_interval, stratified_test
from lab.compare.power import (
    RUNS_CAP,
    aggregate_detectable_difference,
    equivalence_runs,
    runs_per_task_for_difference,
    task_detectable_difference,
)

ALPHA = 0.05
POWER = 0.8
EPSILON = 1e-12

Direction = Literal["improved", "regressed", "inconclusive"]
Verdict = Literal["improved", "regressed", "mixed", "unchanged", "inconclusive"]


@dataclass(frozen=True)
class TaskTest:
    """One paired task's test: the difference, its interval, raw and Holm-adjusted p, the verdict."""

    delta: float
    interval: tuple[float, float]
    p_value: float
    p_adjusted: float
    verdict: Direction


@dataclass(frozen=True)
class Decision:
    """The aggregate verdict with its test, the indices of tasks that lost reliability and the k that would decide."""

    verdict: Verdict
    reason: str
    test: AggregateTest
    lost: tuple[int, ...]
    k_to_decide: int | None
    k_for_equivalence: int | None


def task_tests(strata: Sequence[Stratum], *, alpha: float = ALPHA) -> list[TaskTest]:
    """Per task: Newcombe interval, Fisher p, Holm-adjusted p across ``strata``, and the verdict."""
    raw = [fisher_p(s.c_base, s.n_base, s.c_cand, s.n_cand) for s in strata]
    adjusted = holm(raw)
    out = []
    for s, p, q in zip(strata, raw, adjusted, strict=True):
        delta = s.c_cand / s.n_cand - s.c_base / s.n_base
        verdict: Direction = "inconclusive"
        if q <= alpha and delta != 0:
            verdict = "improved" if delta > 0 else "regressed"
        out.append(TaskTest(delta, newcombe_interval(s.c_base, s.n_base, s.c_cand, s.n_cand), p, q, verdict))
    return out


def decide(strata: Sequence[Stratum], lost: Sequence[int], tolerance: float, *,
           alpha: float = ALPHA) -> Decision:
    """The aggregate verdict (module docstring) of the paired tasks ``strata``.

    Args:
        strata: the paired tasks' counts.
        lost: indices into ``strata`` of the tasks that lost reliability (per-task verdict *regressed*).
        tolerance: the smallest change that matters (fraction).
        alpha: level of the aggregate test.
    """
    test = stratified_test(strata)
    d, (low, high), p = test.delta, test.interval, test.p_value
    lost = tuple(lost)
    shown = (f"{100 * d:+.1f} points, 95% CI [{100 * low:+.1f}, {100 * high:+.1f}], p={p:.3g}, "
             f"tolerance ±{100 * tolerance:.1f}")
    if p <= alpha and d > tolerance + EPSILON:
        if lost:
            return Decision("mixed", f"aggregate rose ({shown}) but {len(lost)} task(s) lost reliability",
                            test, lost, None, None)
        return Decision("improved", f"aggregate rose significantly ({shown}) and no task lost reliability",
                        test, lost, None, None)
    if p <= alpha and d < 0:
        return Decision("regressed", f"aggregate fell significantly ({shown})", test, lost, None, None)
    inside = low > -tolerance + EPSILON and high < tolerance - EPSILON
    if inside and not lost:
        return Decision("unchanged", f"the interval lies within the tolerance ({shown}) and no task lost "
                        "reliability", test, lost, None, None)
    rates = [s.c_base / s.n_base for s in strata]
    k_decide = runs_per_task_for_difference(rates, d, alpha=alpha) if abs(d) > EPSILON else None
    k_equiv = equivalence_runs(rates, d, tolerance)
    why = []
    if p <= alpha:
        why.append("a significant rise no larger than the tolerance")
    else:
        why.append(f"no significant change at α={alpha:g}")
    if not inside:
        why.append("the interval reaches beyond the tolerance")
    if lost:
        why.append(f"{len(lost)} task(s) lost reliability")
    wants = []
    if k_decide is not None and p > alpha:
        wants.append(f"k={_k(k_decide)} runs per task and side would detect a change of "
                     f"{100 * abs(d):.1f} points with {100 * POWER:.0f}% power")
    if k_equiv is not None and not inside:
        wants.append(f"k={_k(k_equiv)} would show equivalence within ±{100 * tolerance:.1f} points")
    reason = f"{'; '.join(why)} ({shown})" + (f"; {'; '.join(wants)}" if wants else "")
    return Decision("inconclusive", reason, test, lost, k_decide, k_equiv)


def _k(k: int) -> str:
    return f"{k}" if k < RUNS_CAP else f"more than {RUNS_CAP - 1:,}"


def detectable(strata: Sequence[Stratum], *, alpha: float = ALPHA) -> dict[str, float | None]:
    """The power line (K8): smallest changes detectable with 80 % power at α, from the base rates.

    Returns:
        ``{"aggregate": …, "perTaskMedian": …, "perTaskAlpha": …}`` — the
        aggregate's shift, and the median over tasks of the per-task change
        at α / T (Holm's first step, the level a lone changed task must
        clear); None where no change can be detected.
    """
    if not strata:
        return {"aggregate": None, "perTaskMedian": None, "perTaskAlpha": None}
    rates = [s.c_base / s.n_base for s in strata]
    agg = aggregate_detectable_difference(rates, [s.n_base for s in strata], [s.n_cand for s in strata],
                                          alpha=alpha)
    level = alpha / len(strata)
    per_task = sorted(task_detectable_difference(r, s.n_base, s.n_cand, alpha=level)
                      for r, s in zip(rates, strata, strict=True))
    mid = per_task[len(per_task) // 2] if len(per_task) % 2 else (per_task[len(per_task) // 2 - 1]
                                                                   + per_task[len(per_task) // 2]) / 2
    return {"aggregate": round(agg, 4) if math.isfinite(agg) else None,
            "perTaskMedian": round(mid, 4) if math.isfinite(mid) else None, "perTaskAlpha": level}
