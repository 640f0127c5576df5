"""Ctrl-C during an eval, in process (lab.execute.interrupt): the first signal cancels, the next ones
never cut the cleanup short, and the caller's handlers come back.

The signals are real (``signal.raise_signal`` in this process: Python runs
the handler as the call returns). Every test puts the process's handlers and
``sys.excepthook`` back. The same through a real ``lab run`` process group:
tests/e2e/test_double_interrupt.py.
"""

from __future__ import annotations

import atexit
import io
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab import cleanup
from lab.cleanup import NOTE, SIGNALS
from lab.execute import interrupt, sandboxing


def _restore(found: dict[int, object], hook: object) -> None:
    for signum, handler in found.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]
    sys.excepthook = hook  # type: ignore[assignment]
    interrupt._state.update(installed=False, found=None, keep=False, signalled=False)
    cleanup._noted.clear()


@pytest.fixture(autouse=True)
def handlers() -> Iterator[None]:
    found, hook = {signum: signal.getsignal(signum) for signum in SIGNALS}, sys.excepthook
    _restore(found, hook)
    yield
    _restore(found, hook)


def not_cut_short(action: Callable[[], object]) -> None:
    """Run ``action``; a KeyboardInterrupt out of it fails the test (instead of stopping pytest)."""
    try:
        action()
    except KeyboardInterrupt:
        raise AssertionError("Ctrl-C again raised KeyboardInterrupt during the cleanup") from None


def theirs(signum: int, frame: object) -> None:
    raise AssertionError(f"the caller's handler ran for signal {signum}")


def their_hook(*args: object) -> None:
    raise AssertionError("the caller's excepthook ran")


@given(st.lists(st.sampled_from(SIGNALS), min_size=1, max_size=6))
def test_the_first_signal_cancels_the_next_ones_are_only_noted_and_release_gives_the_handlers_back(
        signals: list[int]) -> None:
    found, hook = {signum: signal.getsignal(signum) for signum in SIGNALS}, sys.excepthook
    signal.signal(signal.SIGINT, theirs)
    sys.excepthook = their_hook
    cancel, announced = threading.Event(), []
    try:
        interrupt.install(cancel, on_cancel=announced.append)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signals[0])
        assert cancel.is_set()
        for signum in signals[1:]:  # Ctrl-C again while cleaning up: nothing raised
            not_cut_short(lambda: signal.raise_signal(signum))  # noqa: B023 (called at once)
        assert cleanup._noted == ([True] if len(signals) > 1 else [])
        interrupt.announce_cancelled()
        interrupt.announce_cancelled()
        assert announced == [signals[0]]
        interrupt.release()
        assert signal.getsignal(signal.SIGINT) is theirs and sys.excepthook is their_hook
        assert all(signal.getsignal(s) is found[s] for s in SIGNALS if s != signal.SIGINT)
    finally:
        _restore(found, hook)


def test_a_new_eval_is_cancelled_again_by_its_first_signal() -> None:
    first, second = threading.Event(), threading.Event()
    interrupt.install(first)
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    interrupt.release()
    interrupt.install(second)
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGTERM)
    assert second.is_set()
    interrupt.release()


def test_a_lab_command_keeps_the_handlers_after_a_cancel_and_gives_them_back_otherwise() -> None:
    with interrupt.for_command():
        interrupt.install(threading.Event())
        interrupt.release()  # the end of one eval of the command (run_graph)
        assert signal.getsignal(signal.SIGINT) is interrupt._handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt), interrupt.for_command():
        interrupt.install(threading.Event())
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is interrupt._handler  # until the process exits
    not_cut_short(lambda: signal.raise_signal(signal.SIGINT))  # Ctrl-C again during the exit cleanup: noted
    assert cleanup._noted == [True]


def _unlink_interrupted_at(call: int, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Make the ``call``-th ``os.unlink`` raise SIGINT in this process first (Ctrl-C mid-removal)."""
    unlink, calls = os.unlink, []

    def unlink_and_interrupt(*args: object, **kwargs: object) -> None:
        calls.append(args)
        if len(calls) == call:
            signal.raise_signal(signal.SIGINT)
        unlink(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink_and_interrupt)
    return calls


def test_the_run_roots_exit_handler_removes_every_task_copy_though_ctrl_c_comes_mid_removal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    registered: list[Callable[[], object]] = []
    monkeypatch.setattr(atexit, "register", lambda func, *args: registered.append(func) or func)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sandboxing, "_root", [])
    root = sandboxing._run_root(io.StringIO())
    (root / "lab-task-copy").mkdir()
    for i in range(20):
        (root / "lab-task-copy" / f"f{i}").write_text("x")
    calls = _unlink_interrupted_at(5, monkeypatch)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # raises KeyboardInterrupt, as before the fix
    [at_exit] = registered
    not_cut_short(at_exit)  # as the interpreter runs it
    assert len(calls) > 5 and not root.exists()
    assert NOTE in capfd.readouterr().err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
