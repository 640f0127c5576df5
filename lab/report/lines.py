"""JSON Lines of a report: runs.jsonl, events.jsonl and the ``json=true`` run line (M8, M9)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from lab.files import dumps_line, encodable, ordered
from lab.report.tally import run_line

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


def record_line(record: dict[str, Any]) -> str:
    """``lab.files.dumps_line(record)`` for a record parsed from JSON (dicts, lists and scalars only), faster.

    Keys are sorted by the C encoder with ``schemaVersion`` put first at the
    top; a nested ``schemaVersion`` key (which :func:`lab.files.ordered` also
    puts first) or a key that cannot be sorted takes the general path.
    """
    rest = {k: v for k, v in record.items() if k != "schemaVersion"}
    try:
        text = json.dumps(rest, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except TypeError:
        return dumps_line(record)
    version = record.get("schemaVersion")
    if '"schemaVersion":' in text or isinstance(version, (dict, list)):
        return dumps_line(record)
    if "schemaVersion" in record:
        text = '{"schemaVersion":' + json.dumps(version, ensure_ascii=False) + ("}" if text == "{}" else "," + text[1:])
    return encodable(text) + "\n"
