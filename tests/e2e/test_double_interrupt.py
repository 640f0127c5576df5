"""Ctrl-C again while `lab run` cleans up after a Ctrl-C: the cleanup still finishes, without a traceback.

The signals go to the command's process group, as a terminal's Ctrl-C does:
the first while a run's verifier is running; the second as soon as the
command printed ``cancelled:`` (on its way to the exit cleanup); the third
once the exit cleanup has begun removing the run root (an inotify event, no
sleeping). A Ctrl-C that lands while a large fixture is being copied leaves
the partial copy to that removal; the test stands one in, ``FILES`` files it
writes in the command's run root while the verifier waits. Before the fix a
signal during the removal raised KeyboardInterrupt inside it: the run root
stayed behind and Python printed ``Exception ignored in atexit callback …
KeyboardInterrupt``. The second signal alone did not show that reliably: it
lands before the removal begins, where the old code printed ``cancelled:``
twice or nothing at all.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
from pathlib import Path

import pytest

from lab.cleanup import NOTE
from tests.helpers.lab_process import command_env, start_script

pytestmark = pytest.mark.slow

FILES = 1000
"""Files of the stand-in partial copy: removing them takes a few milliseconds, longer than the test takes
to send a signal once the removal began (100 were enough to fail the old code here, 1,000 keep a margin
on a loaded machine)."""


IN_DELETE = 0x200
"""inotify's event for an entry removed from the watched directory (<sys/inotify.h>)."""


def _watch_deletions(directory: Path) -> int:
    """An inotify descriptor that turns readable when an entry of ``directory`` is deleted."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(directory), IN_DELETE) < 0:
        raise OSError(ctypes.get_errno(), "inotify")
    return int(fd)


def _suite(root: Path, fifo: Path) -> Path:
    suite = root / "suite"
    (suite / "fixtures" / "one").mkdir(parents=True)
    (suite / "fixtures" / "one" / "a.txt").write_text("a\n")
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t.json").write_text(json.dumps(
        {"schemaVersion": 1, "taskId": "t", "turns": [{"content": "done"}]}))
    verifier = {"id": "slow", "kind": "command", "argv": ["sh", "-c", f"echo go > {fifo}; exec sleep 60"],
                "timeoutMs": 60000}
    (suite / "suite.json").write_text(json.dumps({
        "schemaVersion": 1, "suiteId": "double-interrupt", "suiteVersion": "1.0.0",
        "description": "One task whose verifier says that it started, then waits.",
        "tasks": [{"id": "t", "prompt": "Answer done.", "fixture": "fixtures/one",
                   "budget": {"maxTurns": 2, "maxWallMs": 60000},
                   "policy": {"mode": "auto", "allow": [], "readOnly": True}, "verifiers": [verifier]}]}))
    return suite


def test_ctrl_c_again_while_lab_run_cleans_up_leaves_no_task_copy_and_no_traceback(tmp_path: Path) -> None:
    fifo = tmp_path / "verifier-started"
    os.mkfifo(fifo)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = command_env()
    env.update(LAB_DATA_DIR=str(tmp_path / "data"), TMPDIR=str(temp))
    ready = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the verifier's open for writing does not block
    proc = start_script(["lab", "run", "suite=external", f"suite.path={_suite(tmp_path, fifo)}", "provider=scripted",
                         "k=1", "sandbox=none", "trust_local=true", "yes=true"], env=env, session=True)
    try:
        started, _, _ = select.select([ready], [], [], 120)
        assert started, "the verifier did not start"
    finally:
        os.close(ready)
    partial = next(temp.glob("lab-runs-*/*-*")) / "partial-copy"  # in the command's run root
    partial.mkdir()
    (partial / "f").write_text("x")
    for i in range(FILES):
        os.link(partial / "f", partial / f"f{i}")
    deleted = _watch_deletions(partial)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        err = []
        for line in proc.stderr:
            err.append(line)
            if "cancelled:" in line:
                break
        with contextlib.suppress(ProcessLookupError):  # gone already: nothing left to interrupt
            os.killpg(proc.pid, signal.SIGINT)  # on its way from `cancelled:` to the exit cleanup
            assert select.select([deleted], [], [], 60)[0], "the run root was not removed"
            os.killpg(proc.pid, signal.SIGINT)  # the removal has begun
    finally:
        os.close(deleted)
    _, rest = proc.communicate(timeout=120)
    stderr = "".join(err) + rest
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert stderr.count("cancelled:") == 1 and stderr.count(NOTE) == 1, stderr
    assert [p.name for p in temp.glob("lab-runs-*/*")] == [], "no run root or task copy left behind"
