"""Constants and small helpers shared by the gateway tests (fixtures live in tests/gateway/conftest.py)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from lab.gateway import Halt

if TYPE_CHECKING:
    import openai

TOKEN = "run-token-0123456789"
REAL_KEY = "sk-real-provider-key-5f0c2a9e7b1d4c3a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Halts:
    """An ``on_halt`` callback that records every call; ``event`` is set on the first."""

    def __init__(self) -> None:
        self.calls: list[Halt] = []
        self.event = threading.Event()

    def __call__(self, halt: Halt) -> None:
        self.calls.append(halt)
        self.event.set()


def sdk(base_url: str | None, max_retries: int = 0) -> openai.OpenAI:
    """An official SDK client aimed at a gateway with the run token (use it as a context manager)."""
    import openai  # the SDK's import costs a second: only the tests that drive it pay for it

    assert base_url is not None
    return openai.OpenAI(base_url=base_url, api_key=TOKEN, max_retries=max_retries)
