"""Exclusive run claims (lab.build.claims): held across processes, released by any exit."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

from lab.build.claims import claim, report_lock, run_lock

HOLD = """
import sys
from pathlib import Path
from lab.build.claims import claim
with claim(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def holder(lock: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_lock_files_live_apart_from_records_and_reports(tmp_path: Path) -> None:
    assert run_lock(tmp_path / "runs" / "t" / "s0-r1.json") == tmp_path / ".locks" / "runs" / "t" / "s0-r1.lock"
    assert report_lock(tmp_path / "reports" / "x.k1.s0") == tmp_path / ".locks" / "reports" / "x.k1.s0.lock"


def test_a_claim_held_by_another_process_waits_and_names_its_pid(tmp_path: Path) -> None:
    lock = tmp_path / ".r.lock"
    proc = holder(lock)
    waited: list[str] = []
    acquired = threading.Event()

    def take() -> None:
        with claim(lock, on_wait=waited.append):
            acquired.set()

    thread = threading.Thread(target=take)
    thread.start()
    try:
        assert not acquired.wait(timeout=0.2)  # still held: the claim blocks (bounded check, no sleep)
        assert waited == [str(proc.pid)]
    finally:
        proc.communicate(input="\n", timeout=30)
    thread.join(timeout=30)
    assert acquired.is_set()


def test_a_crashed_holder_leaves_a_stale_lock_the_next_claim_takes_at_once(tmp_path: Path) -> None:
    lock = tmp_path / ".r.lock"
    proc = holder(lock)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert lock.read_text() == f"{proc.pid}\n"  # the stale file names the dead holder
    waited: list[str] = []
    with claim(lock, on_wait=waited.append):
        assert waited == []
    assert lock.exists()
