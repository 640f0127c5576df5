"""JSON Lines of a report: runs.jsonl, events.jsonl and the ``json=true`` run line (M8, M9)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from lab.files import dumps_line, ordered
from lab.report.build import run_line, sort_records

RUN_LINE_SCHEMA_VERSION = 1
EVENT_SCHEMA = "lab.event.v1"


def run_json_line(record: dict[str, Any]) -> str:
    """One compact JSON line (no trailing newline) summarising a finished run (M9).

    Args:
        record: a run record (``run-record.schema.json``).

    Returns:
        ``{"schemaVersion": 1, "type": "run", "suiteId", "configHash",
        ...report.json runs[] line}``: task, repetition, seed, status, claim,
        score, wall time, verifier verdicts, usage (keys absent when not
        reported) and the error kind; keys sorted, ``schemaVersion`` first.
    """
    line = {"schemaVersion": RUN_LINE_SCHEMA_VERSION, "type": "run", "suiteId": record.get("suiteId"),
            "configHash": record.get("configHash"), **run_line(record)}
    return json.dumps(ordered(line), ensure_ascii=False, separators=(",", ":"))


def iter_runs_jsonl(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """``runs.jsonl`` line by line: every full run record, in report order."""
    return (dumps_line(r) for r in sort_records(records))


def runs_jsonl(records: Iterable[dict[str, Any]]) -> str:
    """``runs.jsonl`` as one string (see :func:`iter_runs_jsonl`)."""
    return "".join(iter_runs_jsonl(records))


def derived_events(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ``run_finished`` lifecycle event per record, for reports built without the event stream.

    Returns:
        ``{"schema": "lab.event.v1", "event": "run_finished", "ts": finishedAt,
        "suiteId", "taskId", "repetition", "status"}`` dicts ordered by
        (ts, task id, repetition), so the file never depends on record order.
    """
    events = [{"schema": EVENT_SCHEMA, "event": "run_finished", "ts": r.get("finishedAt"),
               "suiteId": r.get("suiteId"), "taskId": r["taskId"], "repetition": r["repetition"],
               "status": r["status"]} for r in records]
    return sorted(events, key=lambda e: (e["ts"] or "", e["taskId"], e["repetition"]))


def iter_events_jsonl(events: list[dict[str, Any]] | None, records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """``events.jsonl`` line by line: ``events`` as given (in order), or :func:`derived_events` when None."""
    chosen = derived_events(records) if events is None else events
    return (dumps_line(e) for e in chosen)


def events_jsonl(events: list[dict[str, Any]] | None, records: Iterable[dict[str, Any]]) -> str:
    """``events.jsonl`` as one string (see :func:`iter_events_jsonl`)."""
    return "".join(iter_events_jsonl(events, records))
