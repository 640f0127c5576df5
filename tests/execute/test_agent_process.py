"""The supervisor of a command agent's process (lab.execute.agent_process), with real subprocesses."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from lab.execute.agent_process import AgentProcess


def _no_sleeping(seconds: float) -> None:
    raise AssertionError(f"time.sleep({seconds}) called: the lab must notice the exit itself, not poll")


def test_an_exit_is_noticed_without_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # time.sleep is replaced so that a polling wait (Popen.wait with a timeout) fails the test.
    monkeypatch.setattr(time, "sleep", _no_sleeping)
    process = AgentProcess([sys.executable, "-c", "import sys; print('answer'); sys.exit(3)"],
                           env={}, cwd=tmp_path, grace_ms=100)

    status = process.wait(120.0)

    assert (status.exit_code, status.signal, status.ended_by_lab) == (3, None, None)
    assert (status.stdout_tail, status.stdout_bytes) == ("answer\n", 7)


def test_the_wall_deadline_ends_the_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", _no_sleeping)
    process = AgentProcess([sys.executable, "-c", "import select; select.select([], [], [])"],  # blocks for good
                           env={}, cwd=tmp_path, grace_ms=100)

    status = process.wait(0.05)

    assert status.ended_by_lab == "maxWallMs" and status.exit_code is None
    assert status.signal in ("SIGTERM", "SIGKILL")
