"""Lifecycle events of an eval (SPEC X6): versioned JSON Lines.

Each event is one object::

    {"schema": "lab.event.v1", "event": "run_finished", "ts": "2026-11-30T04:05:06.789Z",
     "suiteId": "smoke-coding", "configHash": "…", "taskId": "rename-symbol",
     "repetition": 0, "seed": 0, "status": "pass"}

Events: ``eval_started`` (planned runs), ``run_started``, ``run_finished``
(status), ``run_skipped`` (record up to date), ``run_cancelled``,
``eval_voided`` (three infrastructure errors in a row), ``report_written``.
With ``progress=true`` they stream to stderr as they happen; every command
appends them to ``<run store>/history.jsonl`` (every command on that
configuration, ever; a report's own ``events.jsonl`` holds only its runs).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

SCHEMA = "lab.event.v1"
_FILE_LOCK = threading.Lock()  # several logs may append to one file (variants)


def utc_now() -> str:
    """Current UTC time, ISO 8601 with milliseconds and a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EventLog:
    """Thread-safe sink for lifecycle events.

    Args:
        identity: fields added to every event (suiteId, configHash, runId).
        path: JSONL file the events are appended to (None: keep in memory only).
        stream: where to echo each event as it happens (None: silent).
        clock: returns the timestamp string; injectable for tests.
    """

    def __init__(self, identity: dict[str, Any], *, path: Path | None = None,
                 stream: TextIO | None = None, clock: Callable[[], str] = utc_now) -> None:
        self.identity = dict(identity)
        self.path = path
        self.stream = stream
        self.clock = clock
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Record one event and return it."""
        record = {"schema": SCHEMA, "event": event, "ts": self.clock(), **self.identity, **fields}
        line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            self.events.append(record)
            if self.stream is not None:
                self.stream.write(line)
                self.stream.flush()
        if self.path is not None:
            with _FILE_LOCK:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(line)
        return record

    def child(self, extra: dict[str, Any], *, path: Path | None = None) -> EventLog:
        """A log with ``extra`` added to every event, writing to ``path`` (default: the same file)."""
        return EventLog({**self.identity, **extra}, path=path or self.path, stream=self.stream,
                        clock=self.clock)


def stderr_if(enabled: bool) -> TextIO | None:
    """``sys.stderr`` when ``progress=true``, else None."""
    return sys.stderr if enabled else None
