"""Power and sample size of the comparison tests (SPEC K8): the public API.

What a comparison can detect, and how many runs a wanted change needs, for
the two tests ``lab compare`` uses (:mod:`lab.compare.inference`): Fisher's
exact test per task (power computed exactly by enumeration) and the
stratified permutation test of the task-weighted mean difference (a
continuity-corrected normal test on the test's null variance given each
task's success total, its probability from exact cumulants with an Edgeworth
term; against simulation of the exact test within 4.8 points on the grid of
``benchmarks/compare_error_rates.py``).
The mathematics is in :mod:`lab.report.power` (standard library only, so
reports state their detectable change too); this module is the interface
``lab compare``, ``lab plan`` and the docs refer to.

Rates are fractions in [0, 1]; a "difference" is an absolute change of a
success rate (0.10 = 10 points); run counts are judged runs per side.
Sources: Fisher (1935); Fleiss, Tytun & Ury (1980), Biometrics 36:343–346;
Cohen (1988), *Statistical Power Analysis*, ch. 6; Cox (1970), *The Analysis of
Binary Data*, §4; Hall (1992), *The Bootstrap and Edgeworth Expansion*, §2.2.
"""

from __future__ import annotations

from collections.abc import Sequence

from lab.report import power as _power

RUNS_CAP = _power.RUNS_CAP
aggregate_power = _power.aggregate_power
fisher_power = _power.fisher_power
equivalence_runs = _power.equivalence_runs


def task_detectable_difference(rate: float, n_base: int, n_cand: int, *, alpha: float = 0.05,
                               power: float = 0.8) -> float:
    """Smallest change of one task's success rate Fisher's exact test detects with ``power`` at ``alpha``.

    Args:
        rate: the task's (base) success rate, in [0, 1].
        n_base, n_cand: judged runs per side (>= 1).
        alpha: two-sided level (pass α / number of tasks for Holm's worst case).
        power: wanted probability of rejecting.

    Returns:
        The change in [0, 1] (the harder of the two directions that can reach
        the power), or ``math.inf`` when no change can.

    Raises:
        ValueError: rate outside [0, 1], a side with no run, alpha outside (0, 1).
    """
    return _power.task_detectable(rate, n_base, n_cand, alpha=alpha, power=power)


def aggregate_detectable_difference(rates: Sequence[float], n_base: Sequence[int], n_cand: Sequence[int], *,
                                    alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest shift of every task's rate the aggregate test detects with ``power`` at ``alpha``.

    Args:
        rates: per task (base) success rates in [0, 1].
        n_base, n_cand: judged runs per task and side (same length as ``rates``).

    Returns:
        The shift in [0, 1] (each task's rate moved by it, clipped to [0, 1];
        the harder direction), or ``math.inf`` when no shift can.

    Raises:
        ValueError: empty or unequal sequences, a rate outside [0, 1], a task with no run.
    """
    return _power.aggregate_detectable(rates, n_base, n_cand, alpha=alpha, power=power)


def task_runs_for_difference(rate: float, delta: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per side for Fisher's exact test to detect a change of ``delta`` from ``rate``.

    ``rate + delta`` (or ``rate − delta`` when that leaves [0, 1]); exact
    power up to 80 runs per side, the continuity-corrected normal size
    beyond (Fleiss, Tytun & Ury 1980); at most :data:`RUNS_CAP`.

    Raises:
        ValueError: rate outside [0, 1], delta 0, or no change of delta within [0, 1].
    """
    return _power.task_runs(rate, delta, alpha=alpha, power=power)


def runs_per_task_for_difference(rates: Sequence[float], delta: float, *, alpha: float = 0.05,
                                 power: float = 0.8) -> int:
    """k per task and side for the aggregate test to detect every task's rate moving by ``delta``.

    A negative delta is a fall; rates are clipped to [0, 1]; at most :data:`RUNS_CAP`.

    Raises:
        ValueError: no rates, a rate outside [0, 1], or delta 0.
    """
    return _power.aggregate_runs(rates, delta, alpha=alpha, power=power)


__all__ = ["RUNS_CAP", "aggregate_detectable_difference", "aggregate_power", "equivalence_runs", "fisher_power",
           "runs_per_task_for_difference", "task_detectable_difference", "task_runs_for_difference"]
