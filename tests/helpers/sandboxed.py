"""Run sandbox launches for real and look for what they leave behind."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess

import pytest

from lab.sandbox.base import Launch, SandboxError, spawn_args
from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.registry import probe


def require_bwrap() -> BwrapBackend:
    """A working bwrap backend; skip without one, except under CI where that fails.

    CI (``CI`` set) installs bubblewrap, so a missing or broken bwrap there is
    a broken CI image, never a reason to skip the sandbox tests.
    """
    in_ci = bool(os.environ.get("CI"))
    if shutil.which("bwrap") is None:
        if in_ci:
            pytest.fail("CI is set but bwrap is missing: .ci/run must install bubblewrap")
        pytest.skip("bwrap not installed (apt-get install bubblewrap)")
    try:
        backend = BwrapBackend()
    except SandboxError as exc:
        if in_ci:
            pytest.fail(f"CI is set but bwrap is unusable: {exc}")
        pytest.skip(str(exc))
    reason = probe(backend)
    if reason is not None:
        if in_ci:
            pytest.fail(f"CI is set but bwrap cannot start a sandbox: {reason}")
        pytest.skip(f"bwrap cannot start a sandbox here: {reason}")
    return backend


def run_launch(launch: Launch, *, timeout_s: float = 60,
               stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run a launch like the lab's runner does (own session) and wait for EOF.

    ``communicate`` returns only when every process holding the output pipes
    has closed them, so a leftover that keeps them open would hang here until
    ``timeout_s`` (then the group is killed and ``TimeoutExpired`` raised).
    """
    with spawn_args(launch) as (argv, fds), subprocess.Popen(
            argv, env=launch.env, cwd=launch.cwd, pass_fds=fds, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(stdin, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def pids_with_marker(marker: str) -> list[int]:
    """Host pids of live processes whose command line contains ``marker``.

    A process that is exiting has released its memory, so its command line
    reads empty: only processes that can still run are found.
    """
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry))
    return sorted(found)


def open_pidfds(pids: list[int]) -> list[int]:
    """pidfds for ``pids`` (those already gone are skipped)."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
    return fds


def still_running(pidfds: list[int], timeout_s: float = 30) -> int:
    """Wait until every pidfd's process exited; the count still running at ``timeout_s``.

    A pidfd turns readable when its process exits: this blocks in ``select``,
    it does not poll. Closes the pidfds.
    """
    pending = list(pidfds)
    try:
        while pending:
            ready, _, _ = select.select(pending, [], [], timeout_s)
            if not ready:
                break
            pending = [fd for fd in pending if fd not in ready]
        return len(pending)
    finally:
        for fd in pidfds:
            os.close(fd)
