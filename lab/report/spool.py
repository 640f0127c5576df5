"""Sequences a report writer can grow without holding them: spools and an external sort.

A 100k-run report has lists as long as its runs (``runs``, ``errors``, the
failed-run rows of report.md, the evidence of index.html) and a record order
that differs from the order the records are read in. :class:`Spool` keeps up
to ``limit`` items in memory and the rest in a file, one JSON value per line;
:class:`ExternalSort` sorts any number of small items with sorted runs on
disk merged by :func:`heapq.merge`. Both hold a bounded number of items
whatever the report's size.
"""

from __future__ import annotations

import heapq
import json
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

SPOOL_ITEMS = 1000
SORT_ITEMS = 10_000


class Spool:
    """An append-only, re-iterable sequence of JSON values, spilled to a file past ``limit`` items.

    Items read back from the file are their JSON round trip (a tuple comes
    back as a list); items kept in memory are returned as appended.

    Args:
        directory: where the spill file goes; None keeps every item in memory.
        limit: items kept in memory before spilling (default ``SPOOL_ITEMS``).
    """

    def __init__(self, directory: Path | None = None, limit: int | None = None) -> None:
        self._directory = directory
        self._limit = None if directory is None else SPOOL_ITEMS if limit is None else limit
        self._items: list[Any] = []
        self._file: IO[str] | None = None
        self._path: Path | None = None
        self._count = 0

    def append(self, item: Any) -> None:
        """Add ``item`` at the end."""
        self._count += 1
        if self._file is not None:
            self._file.write(json.dumps(item) + "\n")
            return
        self._items.append(item)
        if self._limit is not None and len(self._items) > self._limit:
            fd, name = tempfile.mkstemp(prefix="spool.", suffix=".jsonl", dir=self._directory)
            self._path = Path(name)
            weakref.finalize(self, self._path.unlink, missing_ok=True)
            self._file = open(fd, "w", encoding="utf-8")
            self._file.writelines(json.dumps(i) + "\n" for i in self._items)
            self._items = []

    def __iter__(self) -> Iterator[Any]:
        if self._file is None:
            return iter(self._items)
        self._file.flush()
        return self._read(self._path)

    @staticmethod
    def _read(path: Path | None) -> Iterator[Any]:
        assert path is not None
        with open(path, encoding="utf-8") as reader:  # its own offset: iterations may overlap, appends follow
            for line in reader:
                yield json.loads(line)

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __repr__(self) -> str:
        return f"Spool({self._count} items{', spilled' if self._file is not None else ''})"

    def close(self) -> None:
        """Delete the spill file (the spool is empty afterwards)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            self._path = None
        self._items = []
        self._count = 0


def materialise(value: Any) -> Any:
    """``value`` with every :class:`Spool` inside dicts and lists replaced by a list of its items."""
    if isinstance(value, Spool):
        return [materialise(item) for item in value]
    if isinstance(value, dict):
        return {key: materialise(item) for key, item in value.items()}
    if isinstance(value, list):
        return [materialise(item) for item in value]
    return value


class ExternalSort:
    """Sort JSON lists (compared as tuples) in bounded memory: sorted runs of ``limit`` items on disk, then merged.

    Args:
        directory: where the sorted runs go (anonymous temp files; None: the system's temp directory).
        limit: items sorted in memory at a time (default ``SORT_ITEMS``).
    """

    def __init__(self, directory: Path | None = None, limit: int | None = None) -> None:
        self._directory = directory
        self._limit = SORT_ITEMS if limit is None else limit
        self._buffer: list[list[Any]] = []
        self._runs: list[IO[str]] = []

    def add(self, item: list[Any]) -> None:
        """Add one item (a list of JSON scalars; items must be mutually comparable)."""
        self._buffer.append(item)
        if len(self._buffer) >= self._limit:
            self._spill()

    def _spill(self) -> None:
        run = tempfile.TemporaryFile("w+", encoding="utf-8", dir=self._directory)
        run.writelines(json.dumps(item) + "\n" for item in sorted(self._buffer))
        run.seek(0)
        self._runs.append(run)
        self._buffer = []

    def sorted(self) -> Iterator[list[Any]]:
        """Every item added, in ascending order (once: the runs are consumed)."""
        if not self._runs:
            items, self._buffer = sorted(self._buffer), []
            return iter(items)
        if self._buffer:
            self._spill()
        return heapq.merge(*(_lines(run) for run in self._runs))

    def close(self) -> None:
        """Delete the sorted runs."""
        for run in self._runs:
            run.close()
        self._runs, self._buffer = [], []


def _lines(run: IO[str]) -> Iterable[list[Any]]:
    for line in run:
        yield json.loads(line)
