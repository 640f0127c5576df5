"""doit's dependency database in the data dir, and the data dir itself, under faults (SPEC X4).

The database (``<data dir>/.doit.sqlite``) is a cache: every run record
carries its inputs, so a run is up to date whatever the database says. Hence:

- a database that is not SQLite any more (overwritten by a crash or a sync
  tool) is moved aside as ``.doit.sqlite.corrupt`` with one warning line and
  rebuilt, instead of a traceback on every command;
- a database that cannot be saved at the end of a command (disk full,
  read-only) costs one warning line: the run records and the report are
  already on disk, and the next command rebuilds what is missing.

:class:`LabSqliteDB` is registered as doit backend ``lab-sqlite3`` (the
``[tool.doit.plugins.backend]`` table of ``pyproject.toml``; ``lab run``
passes the same table to doit). :func:`check_data_dir` refuses a data dir
that cannot hold the run store, in one line, before doit opens anything.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

from doit.dependency import DatabaseException, SqliteDB

from lab.errors import LabError

BACKEND_NAME = "lab-sqlite3"
PLUGINS = {"BACKEND": {BACKEND_NAME: "lab.build.depdb:LabSqliteDB"}}
"""doit's plugin table for :class:`LabSqliteDB` (also in pyproject.toml)."""


# Set once this process has printed the line for a disk fault: the DB's own failure to save,
# which follows from the same fault, then adds no second line.
DISK_FAULT_REPORTED: list[str] = []


class DataDirError(LabError):
    """The data dir (``LAB_DATA_DIR``) cannot hold the run store: one line, exit 1."""


def check_data_dir(data: Path) -> None:
    """Create ``data`` if needed and check that the run store can live there.

    Raises:
        DataDirError: ``data`` is a file, cannot be created, or is not
            writable; the message names the directory and the fault.
    """
    if data.exists() and not data.is_dir():
        raise DataDirError(f"data dir {data}: not a directory (set LAB_DATA_DIR to a directory)")
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(describe_os_error(exc, data)) from None
    if not os.access(data, os.W_OK | os.X_OK):
        raise DataDirError(f"data dir {data}: not writable (read-only file system or no permission)")
    kind = _not_a_file(data / DB_NAME)
    if kind is not None:
        raise DataDirError(f"data dir {data}: {DB_NAME} is {kind}, not the dependency database; "
                           f"remove or rename it (the run records keep every result)")


DB_NAME = ".doit.sqlite"


def _not_a_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (or a link to one), else None."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None  # missing (or a dangling link): sqlite creates it
    except OSError:
        return None  # unreadable: sqlite says why
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return None


def describe_os_error(exc: OSError, data: Path) -> str:
    """``data dir DIR: <fault> (FILE)``: one line for a disk or permission fault."""
    fault = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(data) else ""
    return f"data dir {data}: {fault}{where}"


def looks_like_sqlite(path: Path) -> bool:
    """Whether ``path`` is missing (doit creates it) or starts with the SQLite header."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except FileNotFoundError:
        return True
    except OSError:
        return True  # unreadable: let sqlite say why
    return head in (b"", b"SQLite format 3\x00")


CORRUPT = ("not a database", "malformed", "corrupt")
"""Words of SQLite's messages for a damaged file (other open failures are the disk's)."""


class LabSqliteDB(SqliteDB):  # type: ignore[misc]
    """doit's sqlite3 backend that rebuilds a corrupted file and never fails at save time."""

    desc = "sqlite3, rebuilt when corrupted (the run records carry their inputs)"
    _dirty: set[str]  # doit's: the tasks whose saved state changed
    _cache: dict[str, Any]  # doit's: saved state by task, as read or set in this process

    def __init__(self, name: str, codec: Any, *, module_name: str | None = None) -> None:
        self._read_prefixes: set[str] = set()
        path = Path(name)
        if not looks_like_sqlite(path):
            self._set_aside(path, "not an SQLite database")
        try:
            super().__init__(name, codec, module_name=module_name)
        except (DatabaseException, sqlite3.Error) as exc:
            reason = str(exc).rsplit("Original error: ", 1)[-1]
            if not any(word in reason for word in CORRUPT):
                # Not the file's fault (disk full, read-only, gone): one line, exit 1, under doit too.
                print(f"data dir {path.parent}: cannot open the dependency database: {reason}",
                      file=sys.stderr, flush=True)
                raise SystemExit(1) from None
            self._set_aside(path, reason)
            super().__init__(name, codec, module_name=module_name)

    def _get_task_data(self, task_id: str) -> dict[str, Any]:
        """One task's saved state, read with its siblings: the run tasks of one task id differ in their
        last dotted word (``….rename-symbol.s0-r12``), so one range query serves all k of them."""
        cut = task_id.rfind(".") + 1
        if cut <= 0:
            return dict(super()._get_task_data(task_id))
        prefix = task_id[:cut]
        if prefix in self._read_prefixes:
            return {}  # read with its siblings, and it had no saved state
        self._read_prefixes.add(prefix)
        rows = self._conn.execute("select task_id, task_data from doit where task_id >= ? and task_id < ?",
                                  (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))).fetchall()
        found: dict[str, Any] = {}
        for row in rows:
            data = row["task_data"] if isinstance(row["task_data"], dict) else {}
            if row["task_id"] == task_id:
                found = data
            else:
                self._cache.setdefault(row["task_id"], data)
        return found

    def remove_all(self) -> None:
        super().remove_all()
        self._read_prefixes = set()

    def _unchanged(self, task_id: str) -> bool:
        row = self._conn.execute("select task_data from doit where task_id=?", (task_id,)).fetchone()
        return row is not None and row["task_data"] == self.codec.decode(self.codec.encode(self._cache[task_id]))

    @staticmethod
    def _set_aside(path: Path, reason: str) -> None:
        aside = path.with_name(path.name + ".corrupt")
        try:
            os.replace(path, aside)
            for suffix in ("-journal", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            raise DataDirError(f"{path}: corrupted dependency database ({reason}) and it cannot be "
                               f"moved aside: {exc.strerror or exc}") from None
        print(f"warning: {path}: corrupted dependency database ({reason}); moved to {aside.name} "
              "and rebuilt from the run records", file=sys.stderr, flush=True)

    def dump(self) -> None:
        try:
            # A row saved again with what it already holds (the summary task of an up-to-date eval
            # executes every time) is not written: a no-op command commits nothing (no fsync).
            self._dirty = {task_id for task_id in self._dirty if not self._unchanged(task_id)}
            super().dump()
        except (sqlite3.Error, OSError) as exc:
            if DISK_FAULT_REPORTED:
                return
            print(f"warning: {self.name}: dependency database not saved ({exc}); the run records are "
                  "on disk and the next command rebuilds it", file=sys.stderr, flush=True)
