"""Compute every number of a report from run records (SPEC M1–M7, X2).

All figures are computed here and in :mod:`lab.report.metrics` /
:mod:`lab.report.repetition`; the Markdown, HTML and JUnit writers only
format them. Definitions (the user-facing version is ``docs/reports.md``):

- *judged* runs: status ``pass``, ``fail`` or ``budget_exceeded``. Errored
  runs (infrastructure, replay divergence, a verifier that could not run) are
  counted apart and excluded from every rate.
- ``successRate`` (M1) = passes / judged, with its 95 % Wilson interval
  ``wilson95`` = [low, high]; both null when nothing was judged. A replay
  report has ``wilson95`` null everywhere: a replay is deterministic, so its
  rates carry no sampling interval (SPEC K1, modes).
- ``passAtK`` / ``passHatK`` per task (M2): the unbiased estimators of
  :mod:`lab.report.stats` with k' = min(k, judged); with k' = judged they are "at
  least one judged run passed" and "every judged run passed". The suite's
  ``passAtK`` / ``passHatK`` are the fractions of tasks (with ≥ 1 judged run)
  that passed at least once / every time.
- ``flaky``: the task was observed both passing and not passing among its
  judged runs (pass@k yes, pass^k no).
- ``lowPower`` (M3): fewer than 5 judged runs (per task; overall on the
  summary, plus ``lowPowerTasks``).
- ``falsePositives`` / ``falseNegatives`` (X2): judged runs whose agent
  claimed success although a check failed / did not claim success although
  every check passed.

A report is a pure function of (header, set of records): records are sorted
by task id, repetition and seed first, so the bytes never depend on the order
the runs finished in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lab.report.metrics import (
    cached_input,
    claimed_success,
    estimated_block,
    is_judged,
    measured_block,
    usage_of,
)
from lab.report.notes import REPLAY_NOTE as REPLAY_NOTE  # re-exported
from lab.report.notes import SCRIPTED_NOTE as SCRIPTED_NOTE
from lab.report.repetition import repetition_block
from lab.report.stats import pass_at_k, pass_hat_k, wilson_interval

REPORT_SCHEMA_VERSION = 1
JUDGED = ("pass", "fail", "budget_exceeded")
LOW_POWER_RUNS = 5


def sort_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records in report order: task id, repetition, seed (a total order for one eval)."""
    return sorted(records, key=lambda r: (r["taskId"], r["repetition"], r.get("seed", 0)))


def build_report(header: dict[str, Any], records: list[dict[str, Any]], *,
                 planned_tasks: Sequence[str] | None = None) -> dict[str, Any]:
    """The report document for ``records`` (one suite, one configuration).

    Args:
        header: the conditions (suite id/version/digest, harness version and
            digest, config hash, variant, provider, model, mode, k, seed, run
            id, rates {input, output} in USD per million tokens, compaction).
        records: run records (``run-record.schema.json``) in any order.
        planned_tasks: ids of every task the eval planned; tasks without a
            record still get a (zero-run) task block and count towards
            ``repetition.requested``. Default: the task ids of ``records``.
            A header ``runsRequested`` (k × tasks planned, set by
            ``lab.build.graph``) takes precedence for ``repetition.requested``.

    Returns:
        A JSON-able dict whose first key is ``schemaVersion`` with blocks
        header, summary, tasks, measured (absent when nothing was judged),
        estimated (absent unless both rates are given and usage is complete),
        repetition, errors and runs (``report.schema.json``).
    """
    records = sort_records(records)
    by_task: dict[str, list[dict[str, Any]]] = {t: [] for t in planned_tasks or ()}
    for record in records:
        by_task.setdefault(record["taskId"], []).append(record)
    k = int(header["k"])
    tasks = [_task_block(task_id, runs, k) for task_id, runs in sorted(by_task.items())]
    doc: dict[str, Any] = {"schemaVersion": REPORT_SCHEMA_VERSION, "header": dict(header)}
    if header.get("mode") == "replay":
        doc["header"]["note"] = REPLAY_NOTE
    elif header.get("provider") == "scripted":
        doc["header"]["note"] = SCRIPTED_NOTE
    doc["summary"] = _summary(records, tasks)
    doc["tasks"] = tasks
    if header.get("mode") == "replay":
        for block in (doc["summary"], *tasks):
            block["wilson95"] = None
    grouped = sorted(by_task.items())
    measured = measured_block(records, grouped)
    if measured is not None:
        doc["measured"] = measured
    estimated = estimated_block(records, grouped, header.get("rates") or {})
    if estimated is not None:
        doc["estimated"] = estimated
    requested = header.get("runsRequested")
    doc["repetition"] = repetition_block(records, sorted(by_task), k,
                                         None if requested is None else int(requested))
    doc["errors"] = [_error_line(r) for r in records if r["status"] == "error"]
    doc["runs"] = [run_line(r) for r in records]
    return doc


def counts(runs: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Run counts by status: runs, judged, passes, fails, budgetExceeded, errors."""
    tally = {"pass": 0, "fail": 0, "budget_exceeded": 0, "error": 0}
    for run in runs:
        tally[run["status"]] += 1
    return {"runs": sum(tally.values()), "judged": tally["pass"] + tally["fail"] + tally["budget_exceeded"],
            "passes": tally["pass"], "fails": tally["fail"],
            "budgetExceeded": tally["budget_exceeded"], "errors": tally["error"]}


def _rate(passes: int, judged: int) -> dict[str, Any]:
    if judged == 0:
        return {"successRate": None, "wilson95": None}
    low, high = wilson_interval(passes, judged)
    return {"successRate": passes / judged, "wilson95": [low, high]}


def claims(runs: Iterable[dict[str, Any]]) -> dict[str, int]:
    """X2 over judged runs: falsePositives (claimed success, not passed), falseNegatives.

    The claim is read against the task's expected outcome (:func:`claimed_success`):
    on a refusal task a give-up is the claimed success.
    """
    judged = [r for r in runs if is_judged(r)]
    return {"falsePositives": sum(1 for r in judged if claimed_success(r) and r["status"] != "pass"),
            "falseNegatives": sum(1 for r in judged if not claimed_success(r) and r["status"] == "pass")}


def _task_block(task_id: str, runs: list[dict[str, Any]], k: int) -> dict[str, Any]:
    tally = counts(runs)
    n, c = tally["judged"], tally["passes"]
    block: dict[str, Any] = {"taskId": task_id, **tally, **_rate(c, n)}
    if n >= 1:
        k_eff = min(k, n)
        block["passAtK"] = pass_at_k(n, c, k_eff)
        block["passHatK"] = pass_hat_k(n, c, k_eff)
    else:
        block["passAtK"] = block["passHatK"] = None
    block["flaky"] = 0 < c < n
    block["lowPower"] = n < LOW_POWER_RUNS
    cached = cached_input(runs)
    block["cachedInputRatio"] = cached["ratio"]
    block["cachedInputRuns"] = cached["runsReporting"]  # judged runs that reported cached input (M5)
    block.update(claims(runs))
    return block


def _summary(records: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    tally = counts(records)
    judged_tasks = [t for t in tasks if t["judged"] > 0]
    summary: dict[str, Any] = {**tally, **_rate(tally["passes"], tally["judged"])}
    summary["tasks"] = len(tasks)
    summary["passAtK"] = (sum(1 for t in judged_tasks if t["passes"] > 0) / len(judged_tasks)
                          if judged_tasks else None)
    summary["passHatK"] = (sum(1 for t in judged_tasks if t["passes"] == t["judged"]) / len(judged_tasks)
                           if judged_tasks else None)
    summary["flakyTasks"] = [t["taskId"] for t in tasks if t["flaky"]]
    summary["lowPower"] = tally["judged"] < LOW_POWER_RUNS
    summary["lowPowerTasks"] = [t["taskId"] for t in tasks if t["lowPower"]]
    summary["divergences"] = sum(1 for r in records if _error_kind(r) == "replay_divergence")
    summary["cachedInput"] = cached_input(records)
    summary["emptyResponses"] = sum(1 for r in records if any(
        i.get("kind") == "empty_response" for i in r.get("incidents") or []))
    summary.update(claims(records))
    return summary


def _error_kind(record: dict[str, Any]) -> str | None:
    kind = (record.get("error") or {}).get("kind")
    return None if kind is None else str(kind)


def _error_line(record: dict[str, Any]) -> dict[str, Any]:
    error = record.get("error") or {}
    return {"taskId": record["taskId"], "repetition": record["repetition"],
            "kind": error.get("kind"), "message": error.get("message")}


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
    return line
