"""Exclusive claims on the run store: two commands on one data dir run each run once (SPEC X4).

Before a run executes, its command claims it: an exclusive ``flock`` on a
lock file of its own (``<store>/.locks/runs/<taskId>/<s…-r…>.lock``). A second
command that reaches the same run waits until the first has written the
record, then finds it up to date and does not execute it again. The report
is built and published under a claim of its own, from the records on disk,
so the published ``runs.jsonl`` always equals them.

An eval also holds a shared claim on its configuration for as long as its
process lives (``<store>/.locks/evals/<runId>.lock``); ``doit clean eval …``
takes it exclusively, so it refuses while an eval of that configuration runs
(and an eval that starts meanwhile waits for the clean to finish).

The kernel releases a claim when its process exits, however it exits: the
lock file a crashed command leaves behind is stale (it names the dead pid)
and the next command claims it at once. Lock files are kept: removing one
while another command waits on it would let a third claim the run too.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.errors import LabError


def run_lock(record: Path) -> Path:
    """The lock file of the run whose record is ``<store>/runs/<taskId>/<name>.json``:
    ``<store>/.locks/runs/<taskId>/<name>.lock`` (apart, so nothing that lists records or
    reports ever meets a lock file)."""
    store = record.parent.parent.parent
    return store / ".locks" / "runs" / record.parent.name / f"{record.stem}.lock"


def report_lock(report_dir: Path) -> Path:
    """The lock file of ``<store>/reports/<runId>``: ``<store>/.locks/reports/<runId>.lock``."""
    return report_dir.parent.parent / ".locks" / "reports" / f"{report_dir.name}.lock"


def eval_lock(store: Path, run_id: str) -> Path:
    """The lock file of the evals of ``run_id`` in ``store``: ``<store>/.locks/evals/<runId>.lock``."""
    return store / ".locks" / "evals" / f"{run_id}.lock"


_HELD: list[int] = []
"""Descriptors of the claims this process keeps until it exits."""


def hold_eval(lock: Path) -> None:
    """Hold a shared claim on ``lock`` until this process exits (evals of one configuration share it).

    Blocks only while a ``doit clean`` of the same configuration holds it.

    Raises:
        OSError: the lock file cannot be created.
    """
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _HELD.append(fd)


def hold_for_clean(lock: Path) -> bool:
    """Take ``lock`` exclusively until this process exits; False when an eval holds it (nothing taken).

    A configuration no eval ever ran has no lock file: True, and nothing is created.
    """
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _HELD.append(fd)
    return True


def refuse_clean_while_running(store: Path, run_id: str) -> None:
    """Before ``doit clean eval …`` removes anything: hold the eval claim of ``run_id`` exclusively.

    Raises:
        LabError: an eval of this configuration is running on this data dir (it would lose the
            records it relies on); one line.
    """
    if not hold_for_clean(eval_lock(store, run_id)):
        raise LabError(f"doit clean: an eval of this configuration (run id {run_id}) is running on "
                       f"this data dir; let it finish or stop it (Ctrl-C), then clean")


@contextmanager
def claim(lock: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive claim on ``lock`` (created if missing) for the ``with`` block.

    Blocks until no other process holds it; never polls. ``on_wait`` is called
    once, with the holder's pid as written in the file, before blocking.

    Raises:
        OSError: the lock file cannot be created (data dir full or read-only).
        KeyboardInterrupt: the wait was interrupted (Ctrl-C).
    """
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the claim
