"""Run records as doit targets: when one is current, and what a command remembers of each (SPEC X4).

A run record is *current* when it exists, was made from the inputs its run
has now, holds a result (:func:`is_result`) and was not forgotten (``doit
forget`` leaves a marker beside it). Reading and parsing every record on
every command would cost a read and a parse per run, three times; the
:class:`RecordIndex` of a run store remembers, per record, by the sha256 of
its bytes, what those checks and the report's up-to-date check need: the
hash of its inputs, whether it holds a result, and its runtime settings. A
record is read and hashed once per command (the content check of
:mod:`lab.stamps`: no file time is trusted) and parsed only when its sha256
is not the remembered one; the ``doit forget`` marker is looked for with a
``stat``. ``LAB_NO_CACHE=1`` parses every record.

The index lives in ``<data dir>/.cache/records/`` (one file per run store),
is saved at the end of a command (:meth:`RecordIndex.save`) and may be
deleted at any time.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any, NamedTuple

from lab.canonical import canonical_hash, canonical_json
from lab.files import loads_json, read_bytes, read_text
from lab.stamps import cache_dir, caching, read_entry, write_entry

RESULT_STATUSES = frozenset({"pass", "fail", "budget_exceeded"})
"""Statuses that are results: kept, never executed again with the same inputs."""

KIND = "run-record-index"


def forgotten_marker(target: Path) -> Path:
    """The marker ``doit forget`` leaves beside a run record: the record is kept but out of date."""
    return target.with_name(target.name + ".forgotten")


def is_result(record: dict[str, Any]) -> bool:
    """Whether ``record`` holds a result (kept) rather than an infrastructure error (run again).

    ``pass``, ``fail`` and ``budget_exceeded`` are results, and so is a replay
    divergence (the harness's own finding, the same on every replay). Every
    other ``error`` (provider unreachable, missing credentials, rate-limited
    past retries, workspace or sandbox failure, a crash in the lab) says
    nothing about the agent: like a failed build target, it is out of date.
    """
    status = record.get("status")
    if status in RESULT_STATUSES:
        return True
    error = record.get("error")
    return status == "error" and isinstance(error, dict) and error.get("kind") == "replay_divergence"


class RecordFacts(NamedTuple):
    """What the up-to-date checks need of one existing run record file.

    Attributes:
        sha256: hex digest of the file's bytes.
        inputs: :func:`~lab.canonical.canonical_hash` of its ``inputs`` (None: unreadable or none).
        result: whether it holds a result (:func:`is_result`).
        runtime: its ``runtime`` settings ({} when absent).
        forgotten: a ``doit forget`` marker lies beside it.
    """

    sha256: str
    inputs: str | None
    result: bool
    runtime: dict[str, Any]
    forgotten: bool = False


class RecordIndex:
    """The remembered :class:`RecordFacts` of the run records of one run store.

    Args:
        store: the run store (records under ``<store>/runs/``).
        file: where the index is kept; default ``<data dir>/.cache/records/<hash of store>.json``.

    Thread-safe (doit checks tasks from several threads with ``jobs=N``).
    """

    def __init__(self, store: Path, file: Path | None = None) -> None:
        self.store = store
        self.file = file or cache_dir() / "records" / f"{canonical_hash(str(store))[:32]}.json"
        self._entries: dict[str, list[Any]] | None = None
        self._seen: dict[str, RecordFacts] = {}
        self._present: set[str] = set()
        self._dirty = False
        self._lock = threading.Lock()
        _INDEXES.append(self)

    def _loaded(self) -> dict[str, list[Any]]:
        if self._entries is None:
            doc = read_entry(self.file, KIND)
            doc = read_entry(self.file, KIND) if caching() else None
            entries = doc.get("records") if doc and doc.get("store") == str(self.store) else None
            self._entries = {k: v for k, v in entries.items() if isinstance(v, list) and len(v) == 4} \
                if isinstance(entries, dict) else {}
        return self._entries

    def facts(self, target: Path) -> RecordFacts | None:
        """The facts of the record file ``target``; None when it does not exist.

        The file is read and hashed once per command and then again only when
        a run of this command wrote it (:meth:`written`).
        """
        key = str(target)
        seen = self._seen.get(key)
        if seen is not None:
            return seen
        facts = self._read(target)
        if facts is not None:
            self._seen[key] = facts
            self._present.add(key)
        return facts

    def written(self, target: Path) -> None:
        """``target`` was written by this process: judge it again when next asked."""
        self._seen.pop(str(target), None)
        self._present.add(str(target))

    def vanished(self, targets: list[Path]) -> list[Path]:
        """The ``targets`` this command found or wrote that no longer exist.

        A record removed while its eval runs (``doit clean eval …`` or ``rm``
        from another shell) would otherwise count as a run never attempted.
        """
        return [t for t in targets if str(t) in self._present and not os.path.lexists(t)]

    def last_seen(self, target: Path) -> RecordFacts | None:
        """The facts this command last judged ``target`` by (no ``stat``), else :meth:`facts`.

        For what only describes the records (the closing note on runtime
        settings), not for deciding whether anything is up to date.
        """
        seen = self._seen.get(str(target))
        return seen if seen is not None else self.facts(target)

    def _read(self, target: Path) -> RecordFacts | None:
        forgotten = forgotten_marker(target).exists()
        try:
            data = read_bytes(target)
        except FileNotFoundError:
            return None
        except OSError:  # a FIFO, device or directory in a record's place: no record there
            data = b""

        sha = hashlib.sha256(data).hexdigest()
        with self._lock:
            hit = self._loaded().get(str(target))
        if hit is not None and hit[0] == sha:
            return RecordFacts(sha, hit[1], bool(hit[2]), dict(hit[3]) if isinstance(hit[3], dict) else {},
                               forgotten)
        try:
            record = loads_json(data)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            record = {}
        inputs = canonical_hash(record["inputs"]) if "inputs" in record else None
        runtime: dict[str, Any] = record["runtime"] if isinstance(record.get("runtime"), dict) else {}
        facts = RecordFacts(sha256=sha, inputs=inputs, result=is_result(record), runtime=dict(runtime),
                            forgotten=forgotten)
        with self._lock:
            self._loaded()[str(target)] = [sha, inputs, facts.result, facts.runtime]
            self._dirty = True
        return facts

    def save(self) -> None:
        """Write the index if it learned anything (atomically; a disk fault only loses the index)."""
        with self._lock:
            if self._dirty and self._entries is not None and caching():
                self._dirty = not write_entry(self.file, KIND, {"store": str(self.store), "records": self._entries})


class RecordCurrent:
    """doit uptodate check: the record exists, was made from these inputs, holds a result
    (an infrastructure error is run again, see :func:`is_result`) and was not forgotten
    (``doit forget eval …`` marks records; see lab.build.graph).

    With an ``index`` the record is judged from what the index remembers of
    it (one ``stat``); without, it is read (what a run does under its claim).
    """

    def __init__(self, target: Path, inputs: dict[str, Any], index: RecordIndex | None = None) -> None:
        self.target = target
        self.inputs = inputs
        self.index = index

    def __call__(self, task: Any, values: dict[str, Any]) -> bool:
        if self.index is not None:
            facts = self.index.facts(self.target)
            return facts is not None and not facts.forgotten and facts.result \
                and facts.inputs == canonical_hash(self.inputs)
        if forgotten_marker(self.target).exists():
            return False
        try:
            record = loads_json(read_text(self.target))
        except (OSError, ValueError):
            return False
        return isinstance(record, dict) and record.get("inputs") == self.inputs and is_result(record)


class RecordsUnchanged:
    """doit uptodate check: the report is current while its conditions and run records are.

    Records may be missing (runs not executed after an eval was voided), so
    they cannot be doit file_deps; their digest is compared instead.
    """

    def __init__(self, records: list[Path], header: dict[str, Any], index: RecordIndex | None = None) -> None:
        self.records = records
        self.header = header
        self.index = index

    def __call__(self, task: Any, values: dict[str, Any]) -> bool:
        return bool(values.get("records") == records_digest(self.records, self.header, self.index))


def records_digest(records: list[Path], header: dict[str, Any], index: RecordIndex | None = None) -> str:
    """sha256 over the report's conditions and its records' paths and contents (``-`` if missing).

    With an ``index`` a record's content digest is the one this command read.
    """
    digest = hashlib.sha256(canonical_json(header).encode("utf-8"))
    for path in records:
        digest.update(str(path).encode() + b"\0")
        if index is not None:
            facts = index.facts(path)
            digest.update(bytes.fromhex(facts.sha256) if facts is not None else b"-")
        else:
            digest.update(hashlib.sha256(read_bytes(path)).digest() if path.exists() else b"-")
    return digest.hexdigest()


_INDEXES: list[RecordIndex] = []


def record_written(target: Path) -> None:
    """Tell every :class:`RecordIndex` of this process that ``target`` was just written."""
    for index in list(_INDEXES):
        index.written(target)


def forget_records(prep: Any, names: list[str]) -> None:
    """``doit forget eval …``: mark the selected run records out of date, keeping them.

    doit's own forget clears its database only, and a run record is current
    by its saved inputs (so an interrupted eval resumes even when doit could not save its database);
    a marker beside each record makes it run again on the next eval.
    """
    from lab.build.inputs import run_name

    for spec in prep.specs:
        target = prep.record_path(spec)
        if target.exists() and (prep.basename in names or f"{prep.basename}:{run_name(prep, spec)}" in names):
            forgotten_marker(target).touch()
