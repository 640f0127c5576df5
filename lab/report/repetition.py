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

:class:`Repetition` is fed the runs in report order, task after task, and
keeps one task's verifier tallies at a time; its per-task lists go to
spools, so it needs no memory per run beyond one 8-byte score.
"""

from __future__ import annotations

from array import array
from typing import Any

from lab.report.metrics import NewList, is_judged


class Repetition:
    """The ``repetition`` block (M7), fed every run in report order with :meth:`task_done` after each task.

    Args:
        k: repetitions requested per task.
        requested: the planned run count when the caller knows it (header
            ``runsRequested``); default k × the number of tasks.
        new_list: makes the per-task lists (``list`` or a spool factory).
    """

    def __init__(self, k: int, requested: int | None = None, new_list: NewList = list) -> None:
        self.k, self.requested = k, requested
        self.completed = self.assessed = self.invalid = self.resolved = self.tasks_seen = 0
        self.scores = array("d")
        self.per_task, self.verifiers = new_list(), new_list()
        self.variable_tasks, self.variable_verifiers = new_list(), new_list()
        self._task_verdicts: dict[str, list[int]] = {}

    def add(self, record: dict[str, Any]) -> None:
        """Count one run of the current task."""
        self.completed += 1
        self.invalid += record["status"] == "error"
        if is_judged(record):
            self.assessed += 1
            self.resolved += record["status"] == "pass"
            if record.get("score") is not None:
                self.scores.append(float(record["score"]))
        # Per-verifier observations over every run (errored runs included: a verdict is a verdict).
        for verdict in record.get("verifiers", []):
            if verdict["status"] in ("pass", "fail"):
                passed_assessed = self._task_verdicts.setdefault(verdict["id"], [0, 0])
                passed_assessed[0] += verdict["status"] == "pass"
                passed_assessed[1] += 1

    def task_done(self, task_id: str, passed: int, assessed: int) -> None:
        """Close the current task (``passed`` / ``assessed``: its judged runs that passed / all judged)."""
        self.tasks_seen += 1
        self.per_task.append({"taskId": task_id, "passed": passed, "assessed": assessed})
        if 0 < passed < assessed:
            self.variable_tasks.append(task_id)
        for verifier_id, (p, a) in sorted(self._task_verdicts.items()):
            self.verifiers.append({"taskId": task_id, "verifierId": verifier_id, "passed": p, "assessed": a})
            if 0 < p < a:
                self.variable_verifiers.append({"taskId": task_id, "verifierId": verifier_id})
        self._task_verdicts = {}

    def block(self) -> dict[str, Any]:
        """requested, completed, assessed, invalid, resolved, allResolved, score statistics,
        variableTasks, variableVerifiers, tasks and verifiers, as the module docstring defines them."""
        requested = self.k * self.tasks_seen if self.requested is None else self.requested
        scores = self.scores
        stats: dict[str, float | None] = (
            {"scoreMean": sum(scores) / len(scores), "scoreMin": min(scores), "scoreMax": max(scores)}
            if scores else {"scoreMean": None, "scoreMin": None, "scoreMax": None})
        return {
            "requested": requested, "completed": self.completed, "assessed": self.assessed,
            "invalid": self.invalid, "resolved": self.resolved,
            "allResolved": requested > 0 and self.resolved == requested, **stats,
            "variableTasks": self.variable_tasks, "variableVerifiers": self.variable_verifiers,
            "tasks": self.per_task, "verifiers": self.verifiers,
        }
