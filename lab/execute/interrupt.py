"""Ctrl-C and SIGTERM during an eval (SPEC X7).

On SIGINT or SIGTERM the lab sets the eval's cancel event (running agents,
commands and verifiers are killed), waits briefly for runs in worker threads
to clean up, then raises KeyboardInterrupt in the main thread. doit saves the
state of every finished run and stops; no report is published; the command
exits 130 with one line instead of a traceback. SIGTERM (and SIGHUP, a
closed terminal) is treated like SIGINT so finished runs are kept when CI
kills the job.

From the first signal on, the lab is cleaning up (its commands stopped, its
task copies and temp root removed): a further SIGINT, SIGTERM or SIGHUP does
not cut that short, it prints one line saying so (:mod:`lab.cleanup`).

The handlers are the process's while an eval runs. :func:`release` gives back
the ones :func:`install` found (and ``sys.excepthook``) when the eval ends,
so a program calling the Python API (``run_eval``) keeps its own; a ``lab``
command cancelled (:func:`for_command`) keeps the lab's until it exits, so
its exit cleanup is covered too.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

from lab.cleanup import SIGNALS, noted, shielded

CLEANUP_WAIT_S = 10.0
EXIT_CANCELLED = 130
_state: dict[str, Any] = {"installed": False, "cancel": None, "idle": None, "signalled": False,
                          "found": None, "keep": False}


def install(cancel: threading.Event, idle: threading.Condition | None = None,
            active: Any = None, on_cancel: Any = None) -> None:
    """Route SIGINT/SIGTERM/SIGHUP to ``cancel`` until :func:`release` (main thread only).

    Each call starts a new eval: the next signal cancels it.

    Args:
        cancel: set when the user interrupts.
        on_cancel: called once with the signal number when that happens (emits ``run_cancelled``).
        idle: notified whenever a run finishes; with ``active`` (a callable
            returning the number of runs in progress) lets the handler wait
            up to ``CLEANUP_WAIT_S`` seconds for workers to clean up.
    """
    _state.update(cancel=cancel, idle=idle, active=active, on_cancel=on_cancel, signalled=False)
    if _state["installed"] or threading.current_thread() is not threading.main_thread():
        return
    _state["found"] = ({signum: signal.getsignal(signum) for signum in SIGNALS}, sys.excepthook)
    for signum in SIGNALS:
        signal.signal(signum, _handler)
    sys.excepthook = _excepthook
    _state["installed"] = True


def release() -> None:
    """Put back the signal handlers and ``sys.excepthook`` :func:`install` found (main thread only).

    Nothing changes inside :func:`for_command`, nor when nothing was installed.
    """
    if not _state["installed"] or _state["keep"] or threading.current_thread() is not threading.main_thread():
        return
    handlers, excepthook = _state["found"]
    for signum, handler in handlers.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    sys.excepthook = excepthook
    _state.update(installed=False, found=None)


@contextmanager
def for_command() -> Iterator[None]:
    """The block is a ``lab`` command: the handlers :func:`install` sets stay across its evals.

    When it ends after a cancel they stay until the process exits (noting
    further signals: the exit cleanup is not cut short); otherwise they are
    released then, as :func:`release` does.
    """
    _state["keep"] = True
    try:
        yield
    finally:
        _state["keep"] = False
        if not _state["signalled"]:
            release()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state["signalled"]:
        noted(signum, frame)  # a second Ctrl-C: the cleanup goes on
        return
    _state["signalled"] = True
    cancel, idle, active = _state["cancel"], _state["idle"], _state["active"]
    if cancel is not None:
        cancel.set()
        _state["signal"] = signum  # announced later: no I/O or locks inside a signal handler
        if idle is not None and active is not None:
            with idle:
                idle.wait_for(lambda: active() == 0, timeout=CLEANUP_WAIT_S)
    raise KeyboardInterrupt


def announce_cancelled() -> None:
    """Call ``on_cancel`` once for the interruption, outside the signal handler."""
    on_cancel, signum = _state.get("on_cancel"), _state.pop("signal", None)
    if on_cancel is not None and signum is not None:
        on_cancel(signum)


def _excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        with shielded():  # the process ends here: no signal stops what it cleans up
            announce_cancelled()
            print("cancelled: finished runs are kept; run the same command again to resume",
                  file=sys.stderr)
            sys.stdout.flush()
            sys.stderr.flush()
            # What a normal exit runs (as `lab run` gets by returning 130): the process's temp root
            # with its task copies is removed, pooled connections and event files are closed. atexit
            # reports a handler's exception itself and goes on with the next one.
            import atexit

            atexit._run_exitfuncs()
            os._exit(EXIT_CANCELLED)  # doit has saved its state; exit 130, not death by SIGINT
    found = _state["found"]
    (found[1] if found else sys.__excepthook__)(kind, value, tb)
