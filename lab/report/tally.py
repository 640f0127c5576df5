"""The figures of a report, tallied in one pass over its run records in report order.

:class:`ReportTally` is fed every record sorted by task id, repetition and
seed (``lab.report.build.sort_records``; the streaming writer reads them in
that order). A task's records are contiguous in that order, so one task is
tallied at a time: when the next task starts, its blocks (``tasks[]``,
``measured.tasks[]``, ``estimated.tasks[]``, ``repetition.tasks[]`` and
``verifiers[]``) are closed and appended to lists that may be spools
(``lab.report.spool``). :meth:`ReportTally.document` then assembles the
report document that ``lab.report.build`` defines, whose long lists
(``runs``, ``errors``, the per-task blocks) are those lists.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from lab.report.executor_status import ExecutorTotals
from lab.report.metrics import (
    CachedInput,
    Cost,
    Figures,
    NewList,
    claimed_success,
    compaction_tokens_of,
    is_judged,
    priced_rates,
    rates_block,
    usage_of,
)
from lab.report.notes import REPLAY_NOTE as REPLAY_NOTE  # re-exported
from lab.report.notes import SCRIPTED_NOTE as SCRIPTED_NOTE
from lab.report.power import aggregate_detectable, task_detectable
from lab.report.provenance import ExecutionFacts
from lab.report.repetition import Repetition
from lab.report.stats import pass_at_k, pass_hat_k, pass_hat_k_interval, wilson_interval

REPORT_SCHEMA_VERSION = 1
LOW_POWER_RUNS = 5
STATUSES = ("pass", "fail", "budget_exceeded", "error")


def report_key(record: dict[str, Any]) -> tuple[str, int, int]:
    """The order of records in a report: task id, repetition, seed (a total order for one eval)."""
    return record["taskId"], record["repetition"], record.get("seed", 0)


def run_line(record: dict[str, Any]) -> dict[str, Any]:
    """The per-run summary kept in ``report.json`` ``runs`` (and printed by ``json=true``).

    Token keys (``inputTokens``, ``outputTokens``) are present only when the
    run reported usage, ``cachedInputTokens`` only when every main turn
    reported it (M4, M5): unknown figures are absent, never 0.
    """
    usage = usage_of(record)
    raw_usage = record.get("usage") or {}
    line: dict[str, Any] = {
        "taskId": record["taskId"], "repetition": record["repetition"], "seed": record["seed"],
        "status": record["status"], "claim": record.get("claim"), "score": record.get("score"),
        "wallMs": record.get("wallMs"), "stopReason": record.get("stopReason"),
        "budgetExceeded": record.get("budgetExceeded"), "errorKind": _error_kind(record),
        "turns": record.get("turns", 0), "toolCalls": record.get("toolCalls", 0),
        "verifiers": {v["id"]: v["status"] for v in record.get("verifiers", [])},
        "usageReported": usage is not None, "cachedPartial": bool(raw_usage.get("cachedPartial")),
    }
    if usage is not None:
        line["inputTokens"] = usage["inputTokens"]
        line["outputTokens"] = usage["outputTokens"]
        if usage.get("cachedInputTokens") is not None and not line["cachedPartial"]:
            line["cachedInputTokens"] = usage["cachedInputTokens"]
        spent = compaction_tokens_of(record)
        if spent is not None:
            line["compactionTokens"] = spent
    return line


def _error_kind(record: dict[str, Any]) -> str | None:
    kind = (record.get("error") or {}).get("kind")
    return None if kind is None else str(kind)


class Scope:
    """Counts and figures of a set of runs (one task's, or every run), fed one run at a time."""

    def __init__(self, rates: dict[str, float], new_list: NewList, spread: bool = False) -> None:
        self.status = dict.fromkeys(STATUSES, 0)
        self.false_positives = self.false_negatives = 0
        self.cached = CachedInput()
        self.figures = Figures(new_list, spread)
        self.cost = Cost(rates)
        self.executor = ExecutorTotals()

    def add(self, record: dict[str, Any]) -> None:
        status = record["status"]
        if status not in self.status:
            raise ValueError(f"task {record['taskId']} repetition {record['repetition']}: "
                             f"unknown run status {status!r}")
        self.status[status] += 1
        self.executor.add(record)
        if not is_judged(record):
            return
        claimed = claimed_success(record)
        self.false_positives += claimed and status != "pass"
        self.false_negatives += not claimed and status == "pass"
        self.cached.add(record)
        self.figures.add(record)
        self.cost.add(record)

    @property
    def judged(self) -> int:
        return self.status["pass"] + self.status["fail"] + self.status["budget_exceeded"]

    def counts(self) -> dict[str, int]:
        """runs, judged, passes, fails, budgetExceeded, errors."""
        s = self.status
        return {"runs": sum(s.values()), "judged": self.judged, "passes": s["pass"], "fails": s["fail"],
                "budgetExceeded": s["budget_exceeded"], "errors": s["error"]}

    def claims(self) -> dict[str, int]:
        """X2 over judged runs: falsePositives (claimed success, not passed), falseNegatives."""
        return {"falsePositives": self.false_positives, "falseNegatives": self.false_negatives}


def rate(passes: int, judged: int) -> dict[str, Any]:
    """successRate and its 95 % Wilson interval; both None when nothing was judged."""
    if judged == 0:
        return {"successRate": None, "wilson95": None}
    low, high = wilson_interval(passes, judged)
    return {"successRate": passes / judged, "wilson95": [low, high]}


def detectable_block(rates: list[tuple[float, int]], alpha: float = 0.05, power: float = 0.8) -> dict[str, Any]:
    """SPEC K8 for one report: the smallest change a comparison with a candidate of the same k could detect.

    ``aggregate``: the shift of every task's rate the stratified aggregate test
    detects with ``power`` at ``alpha``; ``perTaskMedian``: the median over
    tasks of the change Fisher's test detects at α / T (Holm's first step);
    both computed from each task's observed rate and judged runs, assuming
    the candidate has as many (:mod:`lab.report.power`); None when no change
    can be detected or nothing was judged.
    """
    block: dict[str, Any] = {"power": power, "alpha": alpha, "tasks": len(rates), "aggregate": None,
                             "perTaskMedian": None, "perTaskAlpha": None}
    if not rates:
        return block
    agg = aggregate_detectable([r for r, _ in rates], [n for _, n in rates], [n for _, n in rates],
                               alpha=alpha, power=power)
    level = alpha / len(rates)
    per_task = statistics.median(task_detectable(r, n, n, alpha=level, power=power) for r, n in rates)
    # rounded to 1e-4 (a hundredth of a point): the bisection's last digits are noise
    block.update(aggregate=round(agg, 4) if math.isfinite(agg) else None,
                 perTaskMedian=round(per_task, 4) if math.isfinite(per_task) else None, perTaskAlpha=level)
    return block


class ReportTally:
    """Every figure of one report, fed its run records in report order (:func:`report_key`).

    Args:
        header: the report's conditions (see ``lab.report.build.build_report``).
        planned_tasks: task ids that get a block even without a record.
        new_list: makes every list that grows with the runs or the tasks:
            ``list`` in memory, or a spool factory for a streaming writer.

    Raises (from :meth:`add`):
        ValueError: a record out of report order, or with an unknown status.
    """

    def __init__(self, header: dict[str, Any], *, planned_tasks: Sequence[str] = (), new_list: NewList = list) -> None:
        self.header, self.k = header, int(header["k"])
        self.rates = header.get("rates") or {}
        self._priced = priced_rates(self.rates)
        self._new_list = new_list
        self._planned = sorted(set(planned_tasks), reverse=True)  # popped from the end, in order
        self.all = Scope(self._priced, new_list)
        requested = header.get("runsRequested")
        self.repetition = Repetition(self.k, None if requested is None else int(requested), new_list)
        self.tasks, self.measured_tasks, self.estimated_tasks = new_list(), new_list(), new_list()
        self.flaky_tasks, self.low_power_tasks = new_list(), new_list()
        self.errors, self.runs = new_list(), new_list()
        self.judged_rates: list[tuple[float, int]] = []  # (rate, judged) per task: 16 bytes a task, for K8
        self.judged_tasks = self.tasks_passed_once = self.tasks_always_passed = 0
        self.divergences = self.empty_responses = 0
        self._task: str | None = None
        self._scope: Scope | None = None
        self._last: tuple[str, int, int] | None = None
        self.execution = ExecutionFacts()

    def add(self, record: dict[str, Any]) -> None:
        """Tally one record; records must come in report order."""
        key = report_key(record)
        if self._last is not None and key < self._last:
            raise ValueError(f"records out of report order: {key} after {self._last}")
        self._last = key
        if record["taskId"] != self._task:
            self._close_task()
            self._open_task(record["taskId"])
        assert self._scope is not None
        self._scope.add(record)
        self.all.add(record)
        self.repetition.add(record)
        self.execution.add(record)
        error = record.get("error") or {}
        if _error_kind(record) == "replay_divergence":
            self.divergences += 1
        if any(i.get("kind") == "empty_response" for i in record.get("incidents") or []):
            self.empty_responses += 1
        if record["status"] == "error":
            self.errors.append({"taskId": record["taskId"], "repetition": record["repetition"],
                                "kind": error.get("kind"), "message": error.get("message")})
        self.runs.append(run_line(record))

    def _open_task(self, task_id: str) -> None:
        while self._planned and self._planned[-1] < task_id:  # planned tasks without a record come first
            self._task, self._scope = self._planned.pop(), Scope(self._priced, list)
            self._close_task()
        if self._planned and self._planned[-1] == task_id:
            self._planned.pop()
        self._task, self._scope = task_id, Scope(self._priced, list, spread=True)  # one task in memory at a time

    def _close_task(self) -> None:
        task_id, scope = self._task, self._scope
        if task_id is None or scope is None:
            return
        replay = self.header.get("mode") == "replay"
        tally = scope.counts()
        n, c = tally["judged"], tally["passes"]
        block: dict[str, Any] = {"taskId": task_id, **tally, **rate(c, n)}
        if n >= 1:
            k_eff = min(self.k, n)
            block["passAtK"] = pass_at_k(n, c, k_eff)
            block["passHatK"] = pass_hat_k(n, c, k_eff)
            block["passHatK95"] = None if replay else list(pass_hat_k_interval(n, c, k_eff))
        else:
            block["passAtK"] = block["passHatK"] = block["passHatK95"] = None
        block["flaky"] = 0 < c < n
        # A replay is deterministic and has no intervals: too few runs to estimate a rate is not its concern.
        block["lowPower"] = n < LOW_POWER_RUNS and self.header.get("mode") != "replay"
        cached = scope.cached.block()
        block["cachedInputRatio"] = cached["ratio"]
        block["cachedInputRuns"] = cached["runsReporting"]  # judged runs that reported cached input (M5)
        block.update(scope.claims())
        block["executorStatus"] = scope.executor.block()
        if replay:
            block["wilson95"] = None
        self.tasks.append(block)
        if block["flaky"]:
            self.flaky_tasks.append(task_id)
        if block["lowPower"]:
            self.low_power_tasks.append(task_id)
        if n:
            self.judged_rates.append((c / n, n))
            self.judged_tasks += 1
            self.tasks_passed_once += c > 0
            self.tasks_always_passed += c == n
            self.measured_tasks.append({"taskId": task_id, **scope.figures.block()})
            if "input" in self._priced and "output" in self._priced:
                self.estimated_tasks.append({"taskId": task_id, **scope.cost.figures()})
        self.repetition.task_done(task_id, c, n)
        self._task = self._scope = None

    def document(self) -> dict[str, Any]:
        """The report document (``lab.report.build.build_report``); its long lists are this tally's lists."""
        self._close_task()
        while self._planned:
            self._task, self._scope = self._planned.pop(), Scope(self._priced, list)
            self._close_task()
        doc: dict[str, Any] = {"schemaVersion": REPORT_SCHEMA_VERSION,
                               "header": {**self.header, "execution": self.execution.block()}}
        replay = self.header.get("mode") == "replay"
        if replay:
            doc["header"]["note"] = REPLAY_NOTE
        elif self.header.get("provider") == "scripted":
            doc["header"]["note"] = SCRIPTED_NOTE
        doc["summary"] = self._summary(replay)
        doc["tasks"] = self.tasks
        judged = self.all.judged
        if judged:
            doc["measured"] = {**self.all.figures.block(), "tasks": self.measured_tasks}
        if (self.rates.get("input") is not None and self.rates.get("output") is not None and judged
                and not self.all.figures.missing):
            doc["estimated"] = {**self.all.cost.figures(), "rates": rates_block(self.rates),
                                "tasks": self.estimated_tasks}
        doc["repetition"] = self.repetition.block()
        doc["errors"] = self.errors
        doc["runs"] = self.runs
        return doc

    def _summary(self, replay: bool) -> dict[str, Any]:
        tally = self.all.counts()
        tasks = self.judged_tasks
        summary: dict[str, Any] = {**tally, **rate(tally["passes"], tally["judged"])}
        summary["tasks"] = len(self.tasks)
        summary["passAtK"] = self.tasks_passed_once / tasks if tasks else None
        summary["passHatK"] = self.tasks_always_passed / tasks if tasks else None
        summary["passHatKWilson95"] = (list(wilson_interval(self.tasks_always_passed, tasks))
                                       if tasks and not replay else None)
        summary["flakyTasks"] = self.flaky_tasks
        summary["lowPower"] = tally["judged"] < LOW_POWER_RUNS and not replay
        summary["lowPowerTasks"] = self.low_power_tasks
        summary["divergences"] = self.divergences
        summary["cachedInput"] = self.all.cached.block()
        summary["emptyResponses"] = self.empty_responses
        summary.update(self.all.claims())
        summary["executorStatus"] = self.all.executor.block()
        if replay:
            summary["wilson95"] = None
        else:
            summary["detectable"] = detectable_block(self.judged_rates)
        return summary
