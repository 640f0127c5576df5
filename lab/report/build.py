"""Compute every number of a report from run records (SPEC M1–M7).

All figures are computed here; the Markdown, HTML and JUnit writers only
format them. Judged runs are pass + fail + budget_exceeded; errored runs are
counted apart and excluded from every rate.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from lab.stats import pass_at_k, pass_hat_k, wilson_interval

REPORT_SCHEMA_VERSION = 1
JUDGED = ("pass", "fail", "budget_exceeded")
LOW_POWER_RUNS = 5
REPLAY_NOTE = ("Replay measures the harness alone, deterministically: "
               "a replay says nothing about model quality.")


def build_report(header: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The report document for ``records`` (one suite, one configuration).

    Args:
        header: the conditions (suite id/version/digest, harness version and
            digest, config hash, provider, model, mode, k, seed, run id).
        records: run records in any order; the report sorts them by task id
            and repetition, so it is identical whatever the completion order.

    Returns:
        A JSON-able dict whose first key is ``schemaVersion``.
    """
    records = sorted(records, key=lambda r: (r["taskId"], r["repetition"]))
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["taskId"], []).append(record)
    tasks = [_task_block(task_id, runs, header["k"]) for task_id, runs in sorted(by_task.items())]
    doc: dict[str, Any] = {"schemaVersion": REPORT_SCHEMA_VERSION, "header": dict(header)}
    if header.get("mode") == "replay":
        doc["header"]["note"] = REPLAY_NOTE
    doc["summary"] = _summary(records, tasks)
    doc["tasks"] = tasks
    measured = _measured(records)
    if measured is not None:
        doc["measured"] = measured
    estimated = _estimated(measured, header.get("rates") or {})
    if estimated is not None:
        doc["estimated"] = estimated
    doc["errors"] = [_error_line(r) for r in records if r["status"] == "error"]
    doc["runs"] = [_run_line(r) for r in records]
    return doc


def _counts(runs: Iterable[dict[str, Any]]) -> dict[str, int]:
    runs = list(runs)
    counts = {s: sum(1 for r in runs if r["status"] == s) for s in ("pass", "fail", "budget_exceeded", "error")}
    return {"runs": len(runs), "judged": counts["pass"] + counts["fail"] + counts["budget_exceeded"],
            "passes": counts["pass"], "fails": counts["fail"],
            "budgetExceeded": counts["budget_exceeded"], "errors": counts["error"]}


def _rate(passes: int, judged: int) -> dict[str, Any]:
    if judged == 0:
        return {"successRate": None, "wilson95": None}
    low, high = wilson_interval(passes, judged)
    return {"successRate": passes / judged, "wilson95": [low, high]}


def _claims(runs: list[dict[str, Any]]) -> dict[str, int]:
    judged = [r for r in runs if r["status"] in JUDGED]
    return {"falsePositives": sum(1 for r in judged if r.get("claim") == "success" and r["status"] != "pass"),
            "falseNegatives": sum(1 for r in judged if r.get("claim") != "success" and r["status"] == "pass")}


def _task_block(task_id: str, runs: list[dict[str, Any]], k: int) -> dict[str, Any]:
    counts = _counts(runs)
    n, c = counts["judged"], counts["passes"]
    block: dict[str, Any] = {"taskId": task_id, **counts, **_rate(c, n)}
    if n >= 1:
        kk = min(k, n)
        block["passAtK"] = pass_at_k(n, c, kk)
        block["passHatK"] = pass_hat_k(n, c, kk)
    else:
        block["passAtK"] = block["passHatK"] = None
    block["flaky"] = bool(block["passAtK"]) and block["passHatK"] == 0.0 if n else False
    block["lowPower"] = n < LOW_POWER_RUNS
    block.update(_claims(runs))
    return block


def _summary(records: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    counts = _counts(records)
    judged_tasks = [t for t in tasks if t["judged"] > 0]
    summary: dict[str, Any] = {**counts, **_rate(counts["passes"], counts["judged"])}
    summary["tasks"] = len(tasks)
    summary["passAtK"] = (sum(1 for t in judged_tasks if t["passes"] > 0) / len(judged_tasks)
                          if judged_tasks else None)
    summary["passHatK"] = (sum(1 for t in judged_tasks if t["passes"] == t["judged"]) / len(judged_tasks)
                           if judged_tasks else None)
    summary["flakyTasks"] = [t["taskId"] for t in tasks if t["flaky"]]
    summary["lowPower"] = counts["judged"] < LOW_POWER_RUNS
    summary["divergences"] = sum(1 for r in records if (r.get("error") or {}).get("kind") == "replay_divergence")
    summary.update(_claims(records))
    return summary


def _measured(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Measured block (M4): omitted when any judged run lacks provider usage."""
    judged = [r for r in records if r["status"] in JUDGED]
    if not judged:
        return None
    walls = [r["wallMs"] for r in judged if r.get("wallMs") is not None]
    block: dict[str, Any] = {"runsJudged": len(judged)}
    if walls:
        block["wallMsMedian"] = statistics.median(walls)
        block["wallMsVariance"] = statistics.variance(walls) if len(walls) > 1 else None
    usages = [r.get("usage") for r in judged]
    passes = sum(1 for r in judged if r["status"] == "pass")
    if all(u and u.get("inputTokens") is not None and u.get("outputTokens") is not None for u in usages):
        tokens_in = sum(u["inputTokens"] for u in usages if u)
        tokens_out = sum(u["outputTokens"] for u in usages if u)
        block.update(inputTokens=tokens_in, outputTokens=tokens_out,
                     tokensPerAttempt=(tokens_in + tokens_out) / len(judged),
                     tokensPerSuccess=(tokens_in + tokens_out) / passes if passes else None)
    else:
        block["usageIncomplete"] = True
    if walls and passes:
        block["wallMsPerSuccess"] = sum(walls) / passes
    return block


def _estimated(measured: dict[str, Any] | None, rates: dict[str, Any]) -> dict[str, Any] | None:
    """Estimated USD cost (M6): only with both rates and complete usage; never guessed."""
    if measured is None or "inputTokens" not in measured:
        return None
    if rates.get("input") is None or rates.get("output") is None:
        return None
    cost = (measured["inputTokens"] * rates["input"] + measured["outputTokens"] * rates["output"]) / 1e6
    return {"costUsd": cost, "rates": {"inputUsdPerMTok": rates["input"], "outputUsdPerMTok": rates["output"]}}


def _error_line(record: dict[str, Any]) -> dict[str, Any]:
    error = record.get("error") or {}
    return {"taskId": record["taskId"], "repetition": record["repetition"],
            "kind": error.get("kind"), "message": error.get("message")}


def _run_line(record: dict[str, Any]) -> dict[str, Any]:
    return {"taskId": record["taskId"], "repetition": record["repetition"], "seed": record["seed"],
            "status": record["status"], "claim": record.get("claim"), "score": record.get("score"),
            "wallMs": record.get("wallMs"),
            "verifiers": {v["id"]: v["status"] for v in record.get("verifiers", [])}}
