"""Supervise one command agent's process: start, drain, end its process group.

The agent runs in its own session (process group) with stdin closed. Its
output is drained by two threads that count bytes and keep a bounded tail
(the agent's output is never parsed for progress or scoring, only its tail
kept for the executor status and the claim rule). :meth:`AgentProcess.end`
may be called from any thread (the gateway's ``on_halt``, a wall deadline,
Ctrl-C): SIGTERM to the group, ``grace_ms``, then SIGKILL to the group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lab.errors import ProcessStartError
from lab.sandbox.exitwait import wait_exit

STDERR_TAIL_BYTES = 2048
STDOUT_TAIL_BYTES = 65536
_CHUNK = 65536


class _Tail:
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.total = 0
        self.data = b""

    def drain(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(_CHUNK) if hasattr(stream, "read1") else stream.read(_CHUNK):
                self.total += len(chunk)
                self.data = (self.data + chunk)[-self.keep:]
        except (OSError, ValueError):
            pass
        finally:
            stream.close()

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True)
class ExecutorStatus:
    """How the agent's process ended (the run record's ``executor`` block).

    Attributes:
        exit_code: the exit status, None when ended by a signal.
        signal: the signal's name (``SIGTERM``, ``SIGKILL``) or None.
        duration_ms: start to exit, in milliseconds.
        stdout_bytes, stderr_bytes: bytes the agent wrote.
        stderr_tail: the last 2048 bytes of stderr, invalid UTF-8 replaced.
        stdout_tail: the last 64 KiB of stdout (for a claim rule; not recorded).
        ended_by_lab: the lab ended the process (budget, divergence, cancel).
    """

    exit_code: int | None
    signal: str | None
    duration_ms: int
    stdout_bytes: int
    stderr_bytes: int
    stderr_tail: str
    stdout_tail: str
    ended_by_lab: str | None

    def to_json(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "signal": self.signal, "durationMs": self.duration_ms,
                "stdoutBytes": self.stdout_bytes, "stderrBytes": self.stderr_bytes,
                "stderrTail": self.stderr_tail, "endedByLab": self.ended_by_lab}


class AgentProcess:
    """One started agent.

    Args:
        argv, env, cwd: what to execute (a sandbox ``Launch``).
        grace_ms: SIGTERM to SIGKILL delay when the lab ends it.
        pass_fds: descriptors the process inherits (``lab.sandbox.base.spawn_args``).

    Raises:
        ProcessStartError: the program cannot be started (names it).
    """

    def __init__(self, argv: list[str], *, env: Mapping[str, str], cwd: Path, grace_ms: int,
                 pass_fds: tuple[int, ...] = ()) -> None:
        self.grace_ms = grace_ms
        self._ended = threading.Event()
        self._reason: str | None = None
        self._lock = threading.Lock()
        self._t0 = self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         start_new_session=True, close_fds=True, pass_fds=pass_fds)
        except OSError as exc:
            raise ProcessStartError(f"cannot start agent {argv[0]!r}: {exc.strerror or exc}") from None
        self._out, self._err = _Tail(STDOUT_TAIL_BYTES), _Tail(STDERR_TAIL_BYTES)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [threading.Thread(target=t.drain, args=(s,), daemon=True)
                         for t, s in ((self._out, self.proc.stdout), (self._err, self.proc.stderr))]
        for thread in self._threads:
            thread.start()

    def end(self, reason: str) -> None:
        """End the process group (idempotent, any thread): SIGTERM, grace, SIGKILL."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
        threading.Thread(target=self._kill, name="lab-agent-kill", daemon=True).start()

    def _kill(self) -> None:
        _signal_group(self.proc.pid, signal.SIGTERM)
        if not self._ended.wait(self.grace_ms / 1000):
            _signal_group(self.proc.pid, signal.SIGKILL)

    def wait(self, timeout_s: float | None) -> ExecutorStatus:
        """Wait for the exit (ending the group at ``timeout_s``), then for its output to drain.

        Whatever remains of the group once the leader is gone is SIGKILLed,
        so nothing of the agent outlives the run.
        """
        if not wait_exit(self.proc, timeout_s):  # woken by the exit itself, no polling
            self.end("maxWallMs")
            self.proc.wait()
        self._ended.set()
        _signal_group(self.proc.pid, signal.SIGKILL)  # grandchildren that ignored SIGTERM or detached output
        duration = int((time.monotonic() - self._t0) * 1000)
        for thread in self._threads:
            thread.join()
        code = self.proc.returncode
        return ExecutorStatus(
            exit_code=code if code >= 0 else None,
            signal=signal.Signals(-code).name if code < 0 else None, duration_ms=duration,
            stdout_bytes=self._out.total, stderr_bytes=self._err.total, stderr_tail=self._err.text(),
            stdout_tail=self._out.text(), ended_by_lab=self._reason)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
