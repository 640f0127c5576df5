"""Running a child process safely: no shell, own session, bounded output.

Used by the ``run_command`` tool, the ``command`` verifier and the workspace
``git init``. The pattern follows mini-swe-agent's local environment: the child
gets its own session (so it leads a new process group), and on a timeout or a
cancellation the *whole group* is signalled (SIGTERM, a brief grace, SIGKILL),
so grandchildren die with it. Background processes a command leaves behind are
killed too when the command exits, so nothing outlives the call and no stray
writer keeps the output pipes open. The calling thread itself reads the output
and feeds stdin while it waits (one ``poll`` on the pipes and the child's
pidfd): a command costs no extra threads.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lab.errors import ProcessStartError
from lab.sandbox.base import Launch, spawn_args
from lab.sandbox.exitwait import open_exit_fd

_KILL_GRACE_S = 0.5
"""Seconds between SIGTERM and SIGKILL of a timed-out process group."""

_CANCEL_CHECK_S = 0.05
"""How often a wait looks at the cancel event. The child's exit itself wakes
the wait at once (a pidfd becomes readable), so this adds no latency to a
command that finishes; it only bounds how late a cancellation is noticed."""

_READER_JOIN_S = 2.0
"""How long to wait for the pipes to drain once the group is dead. Only a
process that escaped the group (its own ``setsid``) can hold them longer."""

_CHUNK_BYTES = 65536


@dataclass(frozen=True)
class ProcessResult:
    """The outcome of one child process.

    Attributes:
        exit_code: the exit status; ``None`` when the lab killed the process
            (timeout or cancel); negative ``-N`` when signal N ended it otherwise.
        stdout: kept stdout bytes: all of it, or when ``truncated`` the first and
            the last bytes (together at most ``max_output_bytes``) joined directly.
        stderr: kept stderr bytes, bounded like ``stdout``.
        stdout_bytes: total bytes the process wrote to stdout.
        stderr_bytes: total bytes the process wrote to stderr.
        truncated: True when either stream produced more than was kept.
        timed_out: True when ``timeout_ms`` elapsed and the group was killed.
        cancelled: True when the cancel event stopped the process.
        duration_ms: wall time from start to exit, in milliseconds.
    """

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    timed_out: bool
    cancelled: bool
    duration_ms: int

    def to_json(self) -> dict[str, Any]:
        """Summary without the raw bytes (camelCase keys)."""
        return {
            "exitCode": self.exit_code,
            "stdoutBytes": self.stdout_bytes,
            "stderrBytes": self.stderr_bytes,
            "truncated": self.truncated,
            "timedOut": self.timed_out,
            "cancelled": self.cancelled,
            "durationMs": self.duration_ms,
        }


def minimal_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for commands the lab runs on the agent's behalf.

    Only ``PATH`` is taken from the lab's own environment; API keys and every
    other user variable are left out on purpose.

    Args:
        home: directory used as ``HOME`` (usually the workspace).
        extra: variables added last (they override the defaults).

    Returns:
        ``{"PATH", "LANG": "C.UTF-8", "HOME", "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR"}`` plus ``extra``.
    """
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": tempfile.gettempdir(),
    }
    if extra:
        env.update(extra)
    return env


class _BoundedSink:
    """Keeps the head and the tail of a byte stream within ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2 + limit % 2
        self.tail_limit = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit > 0:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def value(self) -> bytes:
        return bytes(self.head + self.tail)


class _Pipes:
    """The child's pipes, served from the calling thread (no reader or writer threads).

    ``wait`` blocks in ``poll`` on the pipes and an exit descriptor together:
    output is read into the sinks and stdin is written as the pipes allow,
    until the exit descriptor turns readable or the timeout passes.
    """

    def __init__(self, proc: subprocess.Popen[bytes], sinks: tuple[_BoundedSink, _BoundedSink],
                 stdin: bytes | None) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self._poll = select.poll()
        self._readers: dict[int, tuple[IO[bytes], _BoundedSink]] = {}
        for stream, sink in ((proc.stdout, sinks[0]), (proc.stderr, sinks[1])):
            self._readers[stream.fileno()] = (stream, sink)
            self._poll.register(stream.fileno(), select.POLLIN)
        self._stdin: IO[bytes] | None = None
        self._pending = memoryview(stdin or b"")
        if stdin is not None:
            assert proc.stdin is not None
            self._stdin = proc.stdin
            os.set_blocking(proc.stdin.fileno(), False)
            self._poll.register(proc.stdin.fileno(), select.POLLOUT)
            if not stdin:
                self._close_stdin()

    def wait(self, exit_fd: int | None, timeout_s: float) -> bool:
        """Serve the pipes until ``exit_fd`` is readable (True) or ``timeout_s`` passes (False).

        With ``exit_fd`` None: until both output pipes reached end of file (True).
        """
        deadline = time.monotonic() + timeout_s
        if exit_fd is not None:
            self._poll.register(exit_fd, select.POLLIN)
        try:
            while exit_fd is not None or self._readers:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                for fd, _ in self._poll.poll(remaining * 1000):
                    if fd == exit_fd:
                        return True
                    self._serve(fd)
            return True
        finally:
            if exit_fd is not None:
                self._poll.unregister(exit_fd)

    def _serve(self, fd: int) -> None:
        if self._stdin is not None and fd == self._stdin.fileno():
            try:
                written = os.write(fd, self._pending[:_CHUNK_BYTES])
            except BlockingIOError:
                return
            except OSError:  # the child exited or closed stdin early; not an error of ours
                written = len(self._pending)
            self._pending = self._pending[written:]
            if not self._pending:
                self._close_stdin()
            return
        stream, sink = self._readers[fd]
        try:
            chunk = os.read(fd, _CHUNK_BYTES)
        except OSError:
            chunk = b""  # pipe gone under us: what was read is kept
        if chunk:
            sink.feed(chunk)
            return
        self._poll.unregister(fd)
        del self._readers[fd]
        stream.close()

    def _close_stdin(self) -> None:
        assert self._stdin is not None
        self._poll.unregister(self._stdin.fileno())
        try:
            self._stdin.close()
        except OSError:
            pass
        self._stdin = None

    def close(self) -> None:
        """Close whatever is still open (after a drain that timed out)."""
        if self._stdin is not None:
            self._close_stdin()
        for stream, _ in self._readers.values():
            stream.close()
        self._readers.clear()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _kill_group(proc: subprocess.Popen[bytes], pipes: _Pipes) -> None:
    """SIGTERM the whole group, wait briefly for the leader (serving its pipes), then SIGKILL it."""
    _signal_group(proc.pid, signal.SIGTERM)
    with open_exit_fd(proc) as exit_fd:
        pipes.wait(exit_fd, _KILL_GRACE_S)
    # Always: grandchildren may ignore SIGTERM even when the leader obeyed.
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _start(argv: list[str], cwd: Path, env: Mapping[str, str],
           with_stdin: bool, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    if not argv:
        raise ProcessStartError("cannot start a command: argv is empty")
    if not Path(cwd).is_dir():
        raise ProcessStartError(
            f"cannot start {argv[0]!r}: working directory {str(cwd)!r} does not exist")
    try:
        return subprocess.Popen(
            argv, cwd=cwd, env=dict(env), shell=False, start_new_session=True,
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True, pass_fds=pass_fds)
    except FileNotFoundError as exc:
        raise ProcessStartError(f"cannot start {argv[0]!r}: program not found") from exc
    except PermissionError as exc:
        raise ProcessStartError(
            f"cannot start {argv[0]!r}: permission denied (not executable?)") from exc
    except (OSError, ValueError, TypeError) as exc:
        raise ProcessStartError(f"cannot start {argv[0]!r}: {exc}") from exc


def _watch(proc: subprocess.Popen[bytes], timeout_ms: int, cancel: threading.Event | None,
           pipes: _Pipes) -> tuple[bool, bool]:
    """Wait for the leader, serving its pipes; returns (timed_out, cancelled).

    One blocking ``poll`` on the child's pidfd and its pipes with the deadline
    as its timeout: no sleeps and no threads, woken by output or by the exit
    itself (``Popen.wait(timeout=…)`` would poll with sleeps). Without pidfds
    (not Linux ≥ 5.3) a waiter thread does the blocking ``waitpid`` and wakes
    the poll through a pipe.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    with open_exit_fd(proc) as exit_fd:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True, False
            if cancel is not None and cancel.is_set():
                return False, True
            if pipes.wait(exit_fd, remaining if cancel is None else min(_CANCEL_CHECK_S, remaining)):
                proc.wait()  # reaps at once: the child has exited
                return False, False


def run_process(argv: list[str], *, cwd: Path, timeout_ms: int, env: Mapping[str, str],
                max_output_bytes: int = 1_000_000, stdin: bytes | None = None,
                cancel: threading.Event | None = None, pass_fds: tuple[int, ...] = ()) -> ProcessResult:
    """Run ``argv`` without a shell in its own session and collect its output.

    Args:
        argv: program and arguments; ``argv[0]`` is looked up on ``env["PATH"]``.
        cwd: working directory; must exist.
        timeout_ms: wall-clock limit in milliseconds; then the group is killed.
        env: the complete environment of the child (see ``minimal_env``).
        max_output_bytes: bytes kept *per stream* (head and tail halves).
        stdin: bytes written to the child's stdin, which is then closed;
            ``None`` connects stdin to /dev/null.
        cancel: when set, the group is killed and ``cancelled`` is True.
        pass_fds: descriptors the child inherits (``subprocess.Popen``'s);
            a sandboxed command's come from ``lab.sandbox.base.spawn_args``.

    Returns:
        A ``ProcessResult``; a timeout or cancel is reported there, not raised.

    Raises:
        ProcessStartError: empty argv, missing cwd, program not found or not
            executable; the message names ``argv[0]`` and the reason.
        ValueError: ``timeout_ms`` < 1 or ``max_output_bytes`` < 0.
    """
    if timeout_ms < 1:
        raise ValueError(f"timeout_ms must be >= 1, got {timeout_ms}")
    if max_output_bytes < 0:
        raise ValueError(f"max_output_bytes must be >= 0, got {max_output_bytes}")
    started = time.monotonic()
    proc = _start(argv, cwd, env, stdin is not None, pass_fds)
    sinks = (_BoundedSink(max_output_bytes), _BoundedSink(max_output_bytes))
    pipes = _Pipes(proc, sinks, stdin)
    try:
        timed_out, cancelled = _watch(proc, timeout_ms, cancel, pipes)
    finally:
        # Also on a normal exit: leftover background processes die with the
        # leader (and stop holding the pipes); on an exception, nothing leaks.
        if proc.poll() is None:
            _kill_group(proc, pipes)
            killed = True
        else:
            _signal_group(proc.pid, signal.SIGKILL)
            killed = False
        pipes.wait(None, _READER_JOIN_S)  # what is left in the pipes, up to their end
        pipes.close()
    duration_ms = int((time.monotonic() - started) * 1000)
    return ProcessResult(
        exit_code=None if killed else proc.returncode,
        stdout=sinks[0].value(), stderr=sinks[1].value(),
        stdout_bytes=sinks[0].total, stderr_bytes=sinks[1].total,
        truncated=sinks[0].truncated or sinks[1].truncated,
        timed_out=timed_out and killed, cancelled=cancelled and killed,
        duration_ms=duration_ms)


def run_launch(launch: Launch, *, timeout_ms: int, max_output_bytes: int = 1_000_000,
               cancel: threading.Event | None = None) -> ProcessResult:
    """``run_process`` for a sandbox's ``Launch``: its argv, cwd, env and descriptor arguments.

    Raises:
        ProcessStartError, ValueError: as ``run_process``.
    """
    with spawn_args(launch) as (argv, fds):
        return run_process(argv, cwd=launch.cwd, timeout_ms=timeout_ms, env=launch.env,
                           max_output_bytes=max_output_bytes, cancel=cancel, pass_fds=fds)
