"""The repetition summary of a report (SPEC M7): how many runs, how they ended, what varied.

Terms (``repetition`` block of ``report.json``):

- ``requested`` = k × tasks planned: the runs the eval set out to make.
- ``completed`` = run records present for the report, whatever their status
  (a cancelled eval publishes no report, so normally completed = requested).
- ``assessed`` = judged runs (status pass, fail or budget_exceeded): the
  verifiers delivered a verdict.
- ``invalid`` = errored runs (status error: infrastructure, replay
  divergence, a verifier that could not run); completed = assessed + invalid.
- ``resolved`` = runs that passed (every verifier passed and the agent answered).
- ``allResolved`` = requested > 0 and resolved == requested: every requested
  run exists, was assessed and passed.
- ``scoreMean`` / ``scoreMin`` / ``scoreMax``: over assessed runs with a
  score; a run's score is the weighted share of passing verifiers,
  sum(weight of passes) / sum(weights) (V7, computed in ``lab.execute.verifiers``);
  null when no assessed run has a score.
- ``variableTasks``: tasks observed both passing and not passing among their
  assessed runs (0 < passed < assessed) — the flaky tasks.
- ``variableVerifiers``: [{taskId, verifierId}] verifiers observed both
  passing and failing across the runs of their task.
- ``tasks``: [{taskId, passed, assessed}] per task;
  ``verifiers``: [{taskId, verifierId, passed, assessed}] per verifier, where
  assessed counts the runs that have a pass/fail verdict from it. A partially
  assessed run (one verifier passed, another could not run: the run is
  invalid, with no score and no resolution) keeps its valid observations
  here: the verifiers that did deliver a verdict are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.report.metrics import is_judged


def _score_stats(assessed: list[dict[str, Any]]) -> dict[str, float | None]:
    scores = [float(r["score"]) for r in assessed if r.get("score") is not None]
    if not scores:
        return {"scoreMean": None, "scoreMin": None, "scoreMax": None}
    return {"scoreMean": sum(scores) / len(scores), "scoreMin": min(scores), "scoreMax": max(scores)}


def _verifier_counts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-verifier pass/fail observations over every run (errored runs included: a verdict is a verdict)."""
    tally: dict[tuple[str, str], list[int]] = {}
    for run in records:
        for verdict in run.get("verifiers", []):
            if verdict["status"] not in ("pass", "fail"):
                continue
            passed_assessed = tally.setdefault((run["taskId"], verdict["id"]), [0, 0])
            passed_assessed[0] += verdict["status"] == "pass"
            passed_assessed[1] += 1
    return [{"taskId": task_id, "verifierId": verifier_id, "passed": p, "assessed": a}
            for (task_id, verifier_id), (p, a) in sorted(tally.items())]


def repetition_block(records: list[dict[str, Any]], planned_tasks: Sequence[str], k: int,
                     requested: int | None = None) -> dict[str, Any]:
    """The ``repetition`` block (M7).

    Args:
        records: every run record of the report, in report order.
        planned_tasks: ids of the tasks the eval planned (sorted).
        k: repetitions requested per task.
        requested: the planned run count when the caller knows it (header
            ``runsRequested``); default k × len(planned_tasks).

    Returns:
        requested, completed, assessed, invalid, resolved, allResolved,
        scoreMean, scoreMin, scoreMax, variableTasks, variableVerifiers,
        tasks and verifiers as the module docstring defines them.
    """
    assessed = [r for r in records if is_judged(r)]
    if requested is None:
        requested = k * len(planned_tasks)
    resolved = sum(1 for r in assessed if r["status"] == "pass")
    tally = {task_id: [0, 0] for task_id in planned_tasks}
    for run in assessed:
        passed_assessed = tally.setdefault(run["taskId"], [0, 0])
        passed_assessed[0] += run["status"] == "pass"
        passed_assessed[1] += 1
    per_task = [{"taskId": task_id, "passed": p, "assessed": a} for task_id, (p, a) in sorted(tally.items())]
    verifiers = _verifier_counts(records)
    return {
        "requested": requested, "completed": len(records), "assessed": len(assessed),
        "invalid": sum(1 for r in records if r["status"] == "error"), "resolved": resolved,
        "allResolved": requested > 0 and resolved == requested, **_score_stats(assessed),
        "variableTasks": [task_id for task_id, (p, a) in sorted(tally.items()) if 0 < p < a],
        "variableVerifiers": [{"taskId": v["taskId"], "verifierId": v["verifierId"]}
                              for v in verifiers if 0 < v["passed"] < v["assessed"]],
        "tasks": per_task, "verifiers": verifiers,
    }
