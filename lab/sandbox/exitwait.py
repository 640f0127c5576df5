"""Waiting for a child's exit without polling: its pidfd, or a pipe a reaper thread writes to.

``Popen.wait(timeout=…)`` sleeps in steps of up to 50 ms; these wake on the exit itself.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def open_exit_fd(proc: subprocess.Popen[bytes]) -> Iterator[int]:
    """A descriptor that turns readable when the child exits: its pidfd, or else a pipe a
    waiter thread writes to after ``waitpid``."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd support, or the child is already reaped
        read_end, write_end = os.pipe()

        def reap() -> None:
            try:
                proc.wait()
                os.write(write_end, b"x")
            except OSError:
                pass  # nobody waits any more
            finally:
                os.close(write_end)

        threading.Thread(target=reap, daemon=True).start()
        try:
            yield read_end
        finally:
            os.close(read_end)
        return
    try:
        yield pidfd
    finally:
        os.close(pidfd)


def wait_exit(proc: subprocess.Popen[bytes], timeout_s: float | None) -> bool:
    """Block until ``proc`` exits (then reap it) or ``timeout_s`` seconds pass; True when it exited.

    Woken by the exit itself (the child's pidfd), unlike
    ``Popen.wait(timeout=…)``, which polls with sleeps of up to 50 ms.
    ``timeout_s`` None waits without a limit.
    """
    if timeout_s is None:
        proc.wait()
        return True
    with open_exit_fd(proc) as exit_fd:
        exited = select.poll()
        exited.register(exit_fd, select.POLLIN)
        if proc.poll() is not None or exited.poll(max(0.0, timeout_s) * 1000):
            proc.wait()
            return True
    return False
