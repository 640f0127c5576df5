"""The tested parts of a live comparison document (SPEC K6–K8): per-task tests and the aggregate block.

:func:`assess_tasks` fills each task entry of :mod:`lab.compare.verdicts`
with its difference, interval, raw and Holm-adjusted p-values, the Wilson
screen and the detectable change, and sets its verdict; :func:`aggregate_block`
builds ``comparison.json``'s ``aggregate``. The decisions themselves are
:mod:`lab.compare.decide` (counts in, verdicts out).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from lab.compare.decide import POWER, decide, detectable, task_tests
from lab.compare.inference import Stratum
from lab.compare.power import task_detectable_difference
from lab.report.build import LOW_POWER_RUNS


def _stratum(entry: dict[str, Any]) -> Stratum:
    b, c = entry["base"], entry["cand"]
    return Stratum(b["passes"], b["judged"], c["passes"], c["judged"])


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def disjoint(a: tuple[float, float] | list[float], b: tuple[float, float] | list[float]) -> bool:
    """Whether closed intervals ``a`` and ``b`` share no point (touching is not disjoint)."""
    return a[1] < b[0] or b[1] < a[0]


def screen(entry: dict[str, Any]) -> str:
    """The conservative Wilson screen (SPEC K1): improved/regressed when the 95 % intervals are disjoint."""
    bi, ci = entry["base"]["wilson95"], entry["cand"]["wilson95"]
    if disjoint(bi, ci):
        return "improved" if ci[0] > bi[1] else "regressed"
    return "overlap"


def assess_tasks(tasks: list[dict[str, Any]], alpha: float) -> None:
    """Test every task entry whose gate verdict is *inconclusive* or *low power*; Holm across them.

    Sets ``difference`` {estimate, newcombe95, pValue, pAdjusted}, ``screen``,
    ``detectableChange`` (at α / tested tasks) and, for tasks with at least 5
    judged runs a side, the verdict and reason; *regressed* tasks lose reliability.
    """
    tested = [t for t in tasks if t["verdict"] in ("inconclusive", "low_power")]
    if not tested:
        return
    results = task_tests([_stratum(t) for t in tested], alpha=alpha)
    level = alpha / len(tested)
    for entry, r in zip(tested, results, strict=True):
        entry["difference"] = {"estimate": r.delta, "newcombe95": list(r.interval), "pValue": r.p_value,
                               "pAdjusted": r.p_adjusted}
        entry["screen"] = screen(entry)
        entry["detectableChange"] = _finite(task_detectable_difference(
            entry["base"]["successRate"], entry["base"]["judged"], entry["cand"]["judged"], alpha=level))
        if entry["verdict"] == "low_power":
            continue
        shown = (f"{100 * r.delta:+.1f} points, 95% CI [{100 * r.interval[0]:+.1f}, {100 * r.interval[1]:+.1f}], "
                 f"Fisher p={r.p_value:.3g}, Holm-adjusted p={r.p_adjusted:.3g}")
        entry["verdict"] = r.verdict
        if r.verdict == "inconclusive":
            entry["reason"] = f"no significant change at α={alpha:g} after Holm ({shown})"
        else:
            entry["reason"] = f"significant {'rise' if r.delta > 0 else 'fall'} after Holm ({shown})"
        if r.verdict == "regressed":
            entry["lostReliability"] = True
            entry["lostReliabilityReasons"] = [f"success rate fell significantly ({shown})"]


def aggregate_block(tasks: list[dict[str, Any]], tolerance: float, *, same_mode: bool,
                    alpha: float) -> dict[str, Any]:
    """``comparison.json``'s ``aggregate`` of a live (non-replay) comparison."""
    paired = [t for t in tasks if t["paired"]]
    block: dict[str, Any] = {"tolerance": tolerance, "alpha": alpha, "pairedTasks": len(paired),
                             "excludedTasks": [t["taskId"] for t in tasks if not t["paired"]],
                             "lostReliability": [t["taskId"] for t in paired if t["lostReliability"]]}
    if not same_mode or not paired:
        why = "the modes differ" if not same_mode else "no task has judged runs on both sides"
        return {**block, "verdict": "not_comparable", "reason": why}
    strata = [_stratum(t) for t in paired]
    base_rate = sum(s.c_base / s.n_base for s in strata) / len(strata)
    cand_rate = sum(s.c_cand / s.n_cand for s in strata) / len(strata)
    decision = decide(strata, [i for i, t in enumerate(paired) if t["lostReliability"]], tolerance, alpha=alpha)
    test = decision.test
    power = detectable(strata, alpha=alpha)
    block.update(base=base_rate, cand=cand_rate, delta=test.delta, interval95=list(test.interval),
                 pValue=test.p_value, test=("stratified permutation test, exact" if test.method == "exact"
                                             else "stratified permutation test, Monte Carlo"),
                 power={"power": POWER, "alpha": alpha, "aggregate": power["aggregate"],
                        "perTaskMedian": power["perTaskMedian"], "perTaskAlpha": power["perTaskAlpha"]},
                 taskSample=_task_sample(strata))
    low = [t["taskId"] for t in paired if min(t["base"]["judged"], t["cand"]["judged"]) < LOW_POWER_RUNS]
    if low:
        return {**block, "verdict": "inconclusive",
                "reason": (f"low power: {len(low)} of {len(paired)} paired task(s) have fewer than {LOW_POWER_RUNS} "
                           f"judged runs on a side ({', '.join(low)}); below that the compare claims no direction")}
    block.update(verdict=decision.verdict, reason=decision.reason)
    if decision.k_to_decide is not None:
        block["kToDecide"] = decision.k_to_decide
    if decision.k_for_equivalence is not None:
        block["kForEquivalence"] = decision.k_for_equivalence
    return block


def _task_sample(strata: list[Stratum]) -> dict[str, Any]:
    """The super-population view (tasks as a sample): the mean of per-task differences and its standard error.

    SE = sd(d_i) / √T over the T paired tasks (Miller 2024, "Adding Error Bars to Evals",
    arXiv:2411.00640, §4, the paired-difference standard error); None with fewer than 2 tasks.
    A second, differently posed figure: the verdicts never use it.
    """
    diffs = [s.c_cand / s.n_cand - s.c_base / s.n_base for s in strata]
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else None
    return {"meanDifference": sum(diffs) / len(diffs), "standardError": se}
