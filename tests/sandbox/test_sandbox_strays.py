"""Nothing a sandboxed command starts outlives it: not setsid, not a double fork.

The command below starts four sleepers that try to escape the run in the
ways issue 11 found to work on the host, waits until each reports that it
runs (one byte on a pipe: no sleeps), prints ``started 4`` and then either
exits or waits to be killed. Every sleeper carries a unique marker in its
command line, so the host's ``/proc`` tells whether one survived.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest

from lab.sandbox.base import spawn_args
from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.process import run_launch
from tests.helpers.sandboxed import open_pidfds, pids_with_marker, still_running

SLEEPER = "import os, sys, time; os.write(int(sys.argv[1]), b'r'); os.close(int(sys.argv[1])); {then}time.sleep(1000)"
KINDS = ("setsid", "setsid-f", "double-fork", "daemon")
"""The sleepers' marker suffixes; the last one lets go of the output pipes."""

DETACH = ("fd = os.open('/dev/null', os.O_RDWR); [os.dup2(fd, n) for n in (0, 1, 2)]; ")

SPAWNER = textwrap.dedent("""
    import os, signal, subprocess, sys
    marker, ending, sleeper, detached = sys.argv[1:5]
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)

    def argv(kind, code):
        return ["python3", "-c", code, str(write_end), f"{marker}-{kind}"]

    # 1. `setsid sleeper &`: a new session, keeps the output pipes
    subprocess.Popen(argv("setsid", sleeper), start_new_session=True, pass_fds=[write_end])
    # 2. `setsid -f`: the setsid program forks and its parent exits at once
    subprocess.run(["setsid", "-f", *argv("setsid-f", sleeper)], pass_fds=[write_end])
    # 3. double fork: the grandchild of a session leader, reparented
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("python3", argv("double-fork", sleeper))
        os._exit(0)
    # 4. a daemon that also lets go of stdin, stdout and stderr
    subprocess.Popen(argv("daemon", detached), start_new_session=True, pass_fds=[write_end])
    os.close(write_end)
    started = 0
    while started < 4:
        chunk = os.read(read_end, 4)
        if not chunk:
            break
        started += len(chunk)
    print("started", started, flush=True)
    if ending == "wait-stdin":
        sys.stdin.read()
    elif ending == "wait-fifo":
        with open("ready.fifo", "w") as fifo:
            fifo.write("ready")
        signal.pause()
""")


def _command(marker: str, ending: str) -> list[str]:
    return ["python3", "-c", SPAWNER, marker, ending, SLEEPER.format(then=""),
            SLEEPER.format(then=DETACH)]


def test_leftovers_die_when_the_command_returns(bwrap: BwrapBackend, workspace: Path) -> None:
    marker = f"lab-stray-{secrets.token_hex(6)}"
    launch = bwrap.wrap(_command(marker, "exit"), workspace=workspace, env={})
    result = run_launch(launch, timeout_ms=60_000)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == b"started 4\n"
    # The pipe holders closed the pipes (run_process read to EOF), so they
    # are past releasing their memory: a survivor would still show its marker.
    assert _pipe_holders_alive(marker) == []


def _pipe_holders_alive(marker: str) -> list[str]:
    """Sleepers 1-3 still running. The daemon (4) holds no pipe, so run_process
    may return while the kernel is still tearing it down: the pidfd test below
    waits for it instead."""
    return [kind for kind in KINDS[:3] if pids_with_marker(f"{marker}-{kind}\0")]


def test_leftovers_die_when_the_command_is_cancelled(bwrap: BwrapBackend,
                                                    workspace: Path) -> None:
    marker = f"lab-stray-{secrets.token_hex(6)}"
    fifo = workspace / "ready.fifo"
    os.mkfifo(fifo)
    bwrap.prepare(fifo)
    cancel = threading.Event()

    def cancel_when_ready() -> None:
        with open(fifo) as handle:  # blocks until the command opens it
            handle.read()
        cancel.set()

    watcher = threading.Thread(target=cancel_when_ready, daemon=True)
    watcher.start()
    launch = bwrap.wrap(_command(marker, "wait-fifo"), workspace=workspace, env={})
    # The cancel path of run_process is its timeout path: the group is killed.
    result = run_launch(launch, timeout_ms=60_000,
                         cancel=cancel)
    watcher.join(timeout=30)
    assert result.cancelled and result.stdout == b"started 4\n"
    assert _pipe_holders_alive(marker) == []


@pytest.mark.parametrize("ending", ["exit", "kill"])
def test_every_leftover_is_gone_including_a_detached_daemon(
        bwrap: BwrapBackend, workspace: Path, ending: str) -> None:
    marker = f"lab-stray-{secrets.token_hex(6)}"
    launch = bwrap.wrap(_command(marker, "wait-stdin"), workspace=workspace, env={})
    with spawn_args(launch) as (argv, fds), subprocess.Popen(
            argv, env=launch.env, cwd=launch.cwd, pass_fds=fds, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == b"started 4\n"
        sleepers = [pid for kind in KINDS for pid in pids_with_marker(f"{marker}-{kind}\0")]
        assert len(sleepers) == 4, "each way of escaping started one sleeper"
        pidfds = open_pidfds(sleepers)
        if ending == "kill":
            os.killpg(proc.pid, signal.SIGKILL)  # what the runner does on a timeout
        proc.communicate(b"")  # "exit": stdin reaches EOF, the command returns
    assert still_running(pidfds) == 0
