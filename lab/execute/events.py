"""Lifecycle events of an eval (SPEC X6): versioned JSON Lines.

Each event is one object::

    {"schema": "lab.event.v1", "event": "run_finished", "ts": "2026-11-30T04:05:06.789Z",
     "suiteId": "smoke-coding", "configHash": "…", "taskId": "rename-symbol",
     "repetition": 0, "seed": 0, "status": "pass"}

Events: ``eval_started`` (planned runs), ``run_started``, ``run_finished``
(status), ``run_skipped`` (record up to date), ``run_cancelled``,
``eval_voided`` (three infrastructure errors in a row), ``report_written``,
``eval_finished`` (exitCode), and ``run_error`` (``reason``, ``exitCode``):
the last event of every command that ends in a handled failure — a usage or
setup error before any run (a bad key, a missing grant: exit 1), a report
that cannot be copied to ``out=``, errored runs (exit 1) or a replay
divergence (exit 2). A cancelled command ends with ``run_cancelled`` instead.
With ``progress=true`` they stream to stderr as they happen; every command
appends them to ``<run store>/history.jsonl`` (every command on that
configuration, ever; a report's own ``events.jsonl`` holds only its runs);
a failure before planning has no run store and is streamed only.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from lab.cleanup import at_exit
from lab.files import encodable

SCHEMA = "lab.event.v1"
_FILE_LOCK = threading.Lock()  # several logs may append to one file (variants)
_OBSERVER_LOCK = threading.Lock()  # callbacks run one at a time, whichever thread emits
_EVENT_OBSERVERS: list[Callable[[dict[str, Any]], None]] = []
_RECORD_OBSERVERS: list[Callable[[dict[str, Any]], None]] = []


@contextmanager
def observing(on_event: Callable[[dict[str, Any]], None] | None = None,
              on_record: Callable[[dict[str, Any]], None] | None = None) -> Iterator[None]:
    """Within the block, call ``on_event(event)`` for every lifecycle event emitted in this
    process and ``on_record(record)`` for every run record written (see :func:`notify_record`).

    Callbacks are called one at a time (serialised by a lock, also with ``jobs>1``),
    with a copy of the event or record. Used by the Python API (``lab.build.api``).
    """
    with _OBSERVER_LOCK:
        if on_event is not None:
            _EVENT_OBSERVERS.append(on_event)
        if on_record is not None:
            _RECORD_OBSERVERS.append(on_record)
    try:
        yield
    finally:
        with _OBSERVER_LOCK:
            if on_event is not None:
                _EVENT_OBSERVERS.remove(on_event)
            if on_record is not None:
                _RECORD_OBSERVERS.remove(on_record)


def _notify(observers: list[Callable[[dict[str, Any]], None]], item: dict[str, Any]) -> None:
    with _OBSERVER_LOCK:
        for callback in list(observers):
            callback(copy.deepcopy(item))


def notify_record(record: dict[str, Any]) -> None:
    """Hand a freshly written run record to the record observers (none outside :func:`observing`)."""
    if _RECORD_OBSERVERS:
        _notify(_RECORD_OBSERVERS, record)


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
        if isinstance(fields.get("reason"), str):
            fields["reason"] = redact_reason(fields["reason"])
        record = {"schema": SCHEMA, "event": event, "ts": self.clock(), **self.identity, **fields}
        line = encodable(json.dumps(record, sort_keys=True, ensure_ascii=False)) + "\n"
        with self._lock:
            self.events.append(record)
            if self.stream is not None:
                self.stream.write(line)
                self.stream.flush()
        if self.path is not None:
            with _FILE_LOCK:
                fh = _appender(self.path)
                try:
                    fh.write(line)
                    fh.flush()
                except OSError:  # the disk's fault: report it, and open the file afresh next time
                    _close_appender(self.path)
                    raise
        if _EVENT_OBSERVERS:
            _notify(_EVENT_OBSERVERS, record)
        return record

    def child(self, extra: dict[str, Any], *, path: Path | None = None) -> EventLog:
        """A log with ``extra`` added to every event, writing to ``path`` (default: the same file)."""
        return EventLog({**self.identity, **extra}, path=path or self.path, stream=self.stream,
                        clock=self.clock)


_APPENDERS: dict[Path, TextIO] = {}
_CLOSE_AT_EXIT: list[object] = []
MAX_OPEN_LOGS = 8
"""Event files kept open per process (an eval appends one line per run, also when it is up to date)."""


def _appender(path: Path) -> TextIO:
    """An append handle on ``path`` (caller holds ``_FILE_LOCK``): kept open between events, and
    opened again when the file was removed or replaced since (the next line goes where the path is)."""
    fh = _APPENDERS.get(path)
    if fh is not None:
        try:
            same = os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino
        except OSError:
            same = False
        if same:
            return fh
        _close_appender(path)
    if len(_APPENDERS) >= MAX_OPEN_LOGS:
        _close_appender(next(iter(_APPENDERS)))
    path.parent.mkdir(parents=True, exist_ok=True)
    if not _CLOSE_AT_EXIT:
        _CLOSE_AT_EXIT.append(at_exit(_close_appenders))
    fh = _APPENDERS[path] = open(path, "a", encoding="utf-8")  # noqa: SIM115 (kept open on purpose)
    return fh


def _close_appender(path: Path) -> None:
    fh = _APPENDERS.pop(path, None)
    if fh is not None:
        try:
            fh.close()
        except OSError:
            pass  # what could not be written was reported when it was written


def _close_appenders() -> None:
    with _FILE_LOCK:
        for path in list(_APPENDERS):
            _close_appender(path)


def redact_reason(reason: str) -> str:
    """``reason`` with every key shape masked (an error message may quote what a server or an agent
    sent; events reach ``history.jsonl``, the report's ``events.jsonl`` and stderr like records do).

    The scan is :class:`lab.export.secrets.SecretScanner` over the process environment's
    credentials, imported only when the reason has a word long enough to be a key (16 characters).
    """
    if _LONG_WORD.search(reason) is None:
        return reason  # the fixed reasons ("voided", "run by another command") cost nothing
    from lab.export.secrets import SecretScanner

    return SecretScanner(env=os.environ).redact_text(reason)[0]


_LONG_WORD = re.compile(r"[^\s'\"`,;:()\[\]{}<>]{16,}")


def emit_run_error(events: EventLog | None, reason: str, exit_code: int, *, progress: bool = False) -> None:
    """Emit ``run_error`` (the last event of a handled failure).

    Args:
        events: the command's log; None before one exists (a usage error),
            then the event goes to stderr only, and only when ``progress``.
        reason: the one-line message the user was shown.
        exit_code: the command's exit code (1 or 2).
    """
    log = events if events is not None else EventLog({}, stream=stderr_if(progress))
    log.emit("run_error", reason=reason, exitCode=exit_code)


def stderr_if(enabled: bool) -> TextIO | None:
    """``sys.stderr`` when ``progress=true``, else None."""
    return sys.stderr if enabled else None
