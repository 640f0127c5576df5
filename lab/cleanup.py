"""Cleanup that another Ctrl-C does not cut short: the lab's own temp dirs and processes.

A lab process cleans up after itself: after a Ctrl-C or SIGTERM cancelled an
eval (:mod:`lab.execute.interrupt`) it stops the commands it started and
removes their task copies, and at exit it removes its temp root
(:class:`lab.sandbox.reaper.RunRoot`), closes its event files and its
pooled connections. Left to Python, a second SIGINT (the user pressing
Ctrl-C again while that takes a moment), SIGTERM or SIGHUP would raise
``KeyboardInterrupt`` in the middle of it: the task copies would stay on
disk until the next lab command reaped them, under ``Exception ignored in
atexit callback … KeyboardInterrupt``. This cleanup is bounded (it removes
only the lab's own temp dirs and stops only its own processes), so while it
runs such a signal is noted, not acted on: the first one prints :data:`NOTE`
on stderr (once per process), the cleanup goes on. ``kill -9`` still stops
the process at once; the next lab command then reaps what it left.

The handlers are Python functions, not ``SIG_IGN``: a command the cleanup
starts gets the default actions back when it executes its program.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals a cleanup outlasts (those the lab turns into a cancel)."""
NOTE = "lab: cleaning up (stopping its commands, removing its temp files); Ctrl-C again has no effect"
_noted: list[bool] = []


def noted(signum: int, frame: FrameType | None) -> None:
    """A signal handler that does nothing but print :data:`NOTE` on stderr, the first time in the process.

    One ``os.write`` on file descriptor 2: no buffered stream (the main thread
    may be inside a write to ``sys.stderr``) and no lock. A closed stderr is ignored.
    """
    if _noted:
        return
    _noted.append(True)
    try:
        os.write(2, (NOTE + "\n").encode())
    except OSError:
        pass


@contextmanager
def shielded() -> Iterator[None]:
    """Run the block with SIGINT, SIGTERM and SIGHUP handled by :func:`noted`, then put back the handlers found.

    For cleanup on the way out (an ``atexit`` handler, an exit after a
    cancel): a signal that arrives meanwhile is dropped, not delivered after
    the block. Only the main thread can set handlers (Python runs them there);
    in another thread the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    found = {signum: signal.getsignal(signum) for signum in SIGNALS}
    for signum in SIGNALS:
        signal.signal(signum, noted)
    try:
        yield
    finally:
        for signum, handler in found.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def at_exit(func: Callable[..., object], *args: Any) -> Callable[[], None]:
    """``atexit.register(func, *args)``, with the call :func:`shielded`.

    Returns:
        The callable registered (what ``atexit.unregister`` takes).
    """
    def shielded_call() -> None:
        with shielded():
            func(*args)

    atexit.register(shielded_call)
    return shielded_call


def shield_until_exit() -> None:
    """For a process that is on its way out (a command that has its exit code after a cancel):
    SIGINT, SIGTERM and SIGHUP are :func:`noted` from now on (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, noted)
