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
the runs finished in. The figures are tallied in one pass over the sorted
records (:class:`lab.report.tally.ReportTally`); the streaming writer
(``lab.report.stream``) feeds the same tally from record files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lab.report.tally import (
    LOW_POWER_RUNS,
    REPLAY_NOTE,
    REPORT_SCHEMA_VERSION,
    SCRIPTED_NOTE,
    ReportTally,
    report_key,
    run_line,
)

JUDGED = ("pass", "fail", "budget_exceeded")

__all__ = ["JUDGED", "LOW_POWER_RUNS", "REPLAY_NOTE", "REPORT_SCHEMA_VERSION", "SCRIPTED_NOTE", "build_report",
           "run_line", "sort_records"]


def sort_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records in report order: task id, repetition, seed (a total order for one eval)."""
    return sorted(records, key=report_key)


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

    Raises:
        ValueError: a record with an unknown status.
    """
    tally = ReportTally(header, planned_tasks=planned_tasks or ())
    for record in sort_records(records):
        tally.add(record)
    return tally.document()
