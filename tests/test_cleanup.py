"""Cleanup that another Ctrl-C does not cut short (lab.cleanup): shielded blocks and exit handlers.

The signals are real (``signal.raise_signal`` in this process, handled by
Python as it returns); each test puts the process's handlers back.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from lab import cleanup
from lab.cleanup import NOTE, SIGNALS, shield_until_exit, shielded


@pytest.fixture(autouse=True)
def handlers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh note (printed once per process) and the process's handlers back after the test."""
    monkeypatch.setattr(cleanup, "_noted", [])
    found = {signum: signal.getsignal(signum) for signum in SIGNALS}
    yield
    for signum, handler in found.items():
        signal.signal(signum, handler)


def mine(signum: int, frame: object) -> None:
    raise AssertionError(f"the caller's handler ran for signal {signum}")


def test_signals_in_a_shielded_block_are_noted_once_and_the_handlers_found_come_back(
        capfd: pytest.CaptureFixture[str]) -> None:
    signal.signal(signal.SIGINT, mine)
    term = signal.getsignal(signal.SIGTERM)  # the default, or what an earlier test left (Ray's shutdown hook)
    done = []
    with shielded():
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.raise_signal(signum)
        done.append(True)
    assert done == [True]
    assert capfd.readouterr().err == NOTE + "\n"
    assert signal.getsignal(signal.SIGINT) is mine
    assert signal.getsignal(signal.SIGTERM) is term


def test_a_command_on_its_way_out_notes_every_further_signal() -> None:
    shield_until_exit()
    for signum in SIGNALS:
        signal.raise_signal(signum)
        assert signal.getsignal(signum) is cleanup.noted
    assert cleanup._noted == [True]
