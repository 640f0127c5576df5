"""The process's one deadline thread (lab.providers.transfer): due functions in time order, cancelled ones never."""

from __future__ import annotations

import threading

from lab.providers.transfer import _Watchdog


def test_functions_run_in_the_order_they_fall_due_and_cancelled_ones_never() -> None:
    watchdog = _Watchdog()
    calls: list[str] = []
    last = threading.Event()
    watchdog.schedule(0.2, lambda: (calls.append("c"), last.set()))
    watchdog.schedule(0.0, lambda: calls.append("a"))
    cancelled = watchdog.schedule(5.0, lambda: calls.append("never"))
    watchdog.schedule(0.1, lambda: calls.append("b"))
    watchdog.cancel(cancelled)
    assert last.wait(timeout=60)
    assert calls == ["a", "b", "c"]


def test_an_earlier_deadline_wakes_the_thread_waiting_for_a_later_one() -> None:
    watchdog = _Watchdog()
    early = threading.Event()
    late = watchdog.schedule(3600.0, lambda: None)  # the thread now waits for an hour
    watchdog.schedule(0.0, early.set)
    assert early.wait(timeout=60)
    watchdog.cancel(late)
    watchdog.cancel(late)  # twice, or after it ran: nothing happens
