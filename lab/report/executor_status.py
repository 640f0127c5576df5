"""How each run's execution ended, as an executor counts it: succeeded, failed, cancelled, timed out (SPEC G2).

A run's *verdict* (``status``: pass / fail / budget_exceeded / error) says
what the verifiers found; its *executor status* says how the agent's
execution ended, whatever the verifiers found. Every run has exactly one,
decided from its record in this order (the first rule that holds wins):

1. ``cancelled``: the eval was cancelled while the run executed
   (``stopReason == "cancelled"``, or a command agent's
   ``executor.endedByLab == "cancelled"``);
2. ``timedOut``: the lab ended the run at its wall-clock limit
   (``budgetExceeded == "maxWallMs"``, or ``executor.endedByLab == "maxWallMs"``);
3. ``failed``: the execution did not end on its own: an infrastructure
   error or a replay divergence (``status == "error"``), a command agent
   that exited non-zero, was ended by a signal or was ended by the lab
   (``executor.exitCode != 0``, ``executor.signal``, ``executor.endedByLab``),
   or an agent that stopped for any other reason than its own answer
   (another budget — ``maxTurns``, ``maxTokens``, ``maxToolCalls`` — a
   truncated response, an agent error: ``stopReason != "answered"``);
4. ``succeeded``: otherwise — the agent answered (the built-in agent's
   ``stopReason == "answered"``; a command agent exited 0 on its own) and the
   verifiers ran, whether they passed it or not.

So ``succeeded + failed + cancelled + timedOut == runs`` for every task and
overall. The four names are the executor statuses of the CoreLayer design;
``timedOut`` is its *timed-out* spelt as a JSON key. User docs:
``docs/reports.md`` ("Executor status").
"""

from __future__ import annotations

from typing import Any

EXECUTOR_STATUSES = ("succeeded", "failed", "cancelled", "timedOut")
"""The four executor statuses, in the order every report shows them."""

LABELS = {"succeeded": "succeeded", "failed": "failed", "cancelled": "cancelled", "timedOut": "timed out"}
"""How the report pages and the closing lines name each status."""


def executor_status(record: dict[str, Any]) -> str:
    """The executor status of one run record (one of :data:`EXECUTOR_STATUSES`; rules in the module docstring)."""
    executor = record.get("executor")
    executor = executor if isinstance(executor, dict) else {}
    ended = executor.get("endedByLab")
    if record.get("stopReason") == "cancelled" or ended == "cancelled":
        return "cancelled"
    if record.get("budgetExceeded") == "maxWallMs" or ended == "maxWallMs":
        return "timedOut"
    if record.get("status") == "error":
        return "failed"
    if executor and (executor.get("exitCode") != 0 or executor.get("signal") or ended):
        return "failed"
    return "succeeded" if record.get("stopReason") == "answered" else "failed"


class ExecutorTotals:
    """The executor statuses of a set of runs, counted one run at a time (four integers: constant memory)."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(EXECUTOR_STATUSES, 0)

    def add(self, record: dict[str, Any]) -> None:
        self.counts[executor_status(record)] += 1

    def block(self) -> dict[str, int]:
        """``{"succeeded", "failed", "cancelled", "timedOut"}``: run counts (report.json ``executorStatus``)."""
        return dict(self.counts)


def totals_text(block: dict[str, Any] | None, *, all_names: bool = True) -> str:
    """``5 succeeded, 1 failed, 0 cancelled, 1 timed out``; with ``all_names=False`` zero counts are left
    out (``—`` when every count is zero). ``—`` for a report written before the figure existed."""
    if not block:
        return "—"
    parts = [f"{int(block.get(key, 0))} {LABELS[key]}" for key in EXECUTOR_STATUSES
             if all_names or block.get(key)]
    return ", ".join(parts) or "—"
