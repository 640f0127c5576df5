"""A cap on concurrent calls per provider endpoint (``provider.max_concurrent_calls``; SPEC X9).

A cluster reaches a provider's rate limit long before it runs out of
machines. With ``executor=local`` the cap holds within the process (one
semaphore per endpoint); with ``executor=ray`` a Ray actor holds the slots for
the whole cluster (:class:`lab.execute.ray_worker.CallLimiter`). Either way a
run's provider is wrapped in :class:`GatedProvider`, which holds one slot for
the duration of each call. Replays make no call and are never capped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

__all__ = ["CallGate", "GatedProvider", "local_call_gate"]

CallGate = Callable[[], AbstractContextManager[None]]
"""Holds one of the endpoint's call slots for the duration of a ``with`` block."""

_GATES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_GATES_LOCK = threading.Lock()


def local_call_gate(provider: dict[str, Any], mode: str) -> CallGate | None:
    """The in-process cap on concurrent calls to ``provider``'s endpoint
    (``provider.max_concurrent_calls``; None when unset or in replay, where no call leaves)."""
    cap = provider.get("max_concurrent_calls")
    if cap is None or mode == "replay":
        return None
    from lab.config.identity import endpoint_identity, endpoint_key

    key = (endpoint_key(endpoint_identity(provider, mode)), int(cap))
    with _GATES_LOCK:
        semaphore = _GATES.setdefault(key, threading.BoundedSemaphore(int(cap)))

    @contextmanager
    def slot() -> Iterator[None]:
        with semaphore:
            yield

    return slot


class GatedProvider:
    """A provider whose every call holds one of its endpoint's slots (``provider.max_concurrent_calls``)."""

    def __init__(self, inner: Any, gate: CallGate) -> None:
        self.inner = inner
        self.gate = gate
        self.name = inner.name

    def send(self, request: dict[str, Any], *, purpose: Any = "main", timeout_s: float | None = None) -> Any:
        with self.gate():
            return self.inner.send(request, purpose=purpose, timeout_s=timeout_s)

    def __getattr__(self, attribute: str) -> Any:  # whatever else the wrapped provider offers
        return getattr(self.inner, attribute)
