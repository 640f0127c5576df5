"""On a terminal the eval draws a progress bar and still finishes and prints its summary."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.lab_process import BIN, ROOT, command_env

pytestmark = pytest.mark.slow


def test_eval_on_a_terminal_shows_progress_and_finishes(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    env = command_env()
    env.update(LAB_DATA_DIR=str(tmp_path), TERM="xterm-256color", COLUMNS="120")
    proc = subprocess.Popen([str(BIN / "doit"), "eval", "suite=core", "mode=replay", "k=2"], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=10) == 0, output.decode(errors="replace")[-2000:]
    text = output.decode(errors="replace")
    assert "runs" in text and "10/10" in text  # the bar, at its end
    assert "report: " in text and "success rate 100.0%" in text
