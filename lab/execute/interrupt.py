"""Ctrl-C and SIGTERM during an eval (SPEC X7).

On SIGINT or SIGTERM the lab sets the eval's cancel event (running agents,
commands and verifiers are killed), waits briefly for runs in worker threads
to clean up, then raises KeyboardInterrupt in the main thread. doit saves the
state of every finished run and stops; no report is published; the command
exits 130 with one line instead of a traceback. SIGTERM (and SIGHUP, a
closed terminal) is treated like SIGINT so finished runs are kept when CI
kills the job.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

CLEANUP_WAIT_S = 10.0
EXIT_CANCELLED = 130
_state: dict[str, Any] = {"installed": False, "cancel": None, "idle": None}


def install(cancel: threading.Event, idle: threading.Condition | None = None,
            active: Any = None, on_cancel: Any = None) -> None:
    """Route SIGINT/SIGTERM to ``cancel`` for the rest of this process (main thread only).

    Args:
        cancel: set when the user interrupts.
        on_cancel: called once with the signal number when that happens (emits ``run_cancelled``).
        idle: notified whenever a run finishes; with ``active`` (a callable
            returning the number of runs in progress) lets the handler wait
            up to ``CLEANUP_WAIT_S`` seconds for workers to clean up.
    """
    _state.update(cancel=cancel, idle=idle, active=active, on_cancel=on_cancel)
    if _state["installed"] or threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _handler)
    sys.excepthook = _excepthook
    _state["installed"] = True


def _handler(signum: int, frame: FrameType | None) -> None:
    cancel, idle, active = _state["cancel"], _state["idle"], _state["active"]
    if cancel is not None:
        if cancel.is_set():
            raise KeyboardInterrupt  # second Ctrl-C: stop waiting
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
        announce_cancelled()
        print("cancelled: finished runs are kept; run the same command again to resume",
              file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # What a normal exit runs (as `lab run` gets by returning 130): the process's temp root
        # with its task copies is removed, pooled connections and event files are closed.
        import atexit

        try:
            atexit._run_exitfuncs()
        except BaseException:  # a second Ctrl-C or a failing handler: exit all the same
            pass
        os._exit(EXIT_CANCELLED)  # doit has saved its state; exit 130, not death by SIGINT
    sys.__excepthook__(kind, value, tb)
