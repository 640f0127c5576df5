"""Where a stale run executes: the executor seam (SPEC X9; docs/distributed.md).

A run action hands its ``RunSpec`` to the command's :class:`Executor` and
gets the run's record back by value (or None: cancelled, no record). Every
decision around it stays with the caller on the driver: whether the run is
stale, writing the record, events, progress, the void rule and the report.

Executors are chosen by short registry name (``executor=local|ray``):

- ``local``: :func:`lab.execute.run.execute_run` in this process (``jobs``
  threads);
- ``ray``: a Ray task on a cluster (:mod:`lab.execute.ray_driver`); Ray is
  imported only when this one is chosen.

An unknown name is answered with the list of known ones.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from lab.errors import ConfigError

__all__ = ["EXECUTORS", "CallGate", "Executor", "LocalExecutor", "executor_for", "local_call_gate", "node_fingerprint"]

CallGate = Callable[[], AbstractContextManager[None]]
"""Holds one of the endpoint's call slots for the duration of a ``with`` block."""


class Executor(Protocol):
    """Executes one run and returns its record."""

    name: str

    def execute(self, ctx: Any, spec: Any) -> dict[str, Any] | None:
        """Run ``spec`` of ``ctx`` (an ``EvalContext``) and return its run record.

        Returns:
            The record (a JSON-able dict, ``runtime.executor`` and
            ``runtime.node`` set), or None when the run was cancelled
            (``ctx.cancel``): no record is written for it.
        """
        ...


def node_fingerprint() -> str:
    """A short fingerprint of this machine (host name, architecture, CPU count), not the name itself.

    The report's ``execution.machine`` and a local run's ``runtime.node``.
    """
    try:
        node, machine = os.uname().nodename, os.uname().machine  # what platform.node()/machine() give
    except AttributeError:  # no uname (not POSIX)
        import platform

        node, machine = platform.node(), platform.machine()
    text = f"{node}|{machine}|{os.cpu_count()}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class LocalExecutor:
    """Executes runs in this process, in the thread of the run action (``jobs`` at once)."""

    name = "local"

    def execute(self, ctx: Any, spec: Any) -> dict[str, Any] | None:
        from lab.execute.run import execute_run

        if ctx.call_gate is None:
            ctx.call_gate = local_call_gate(ctx.config.data["provider"], ctx.config.mode)
        record = execute_run(ctx, spec)
        record["runtime"] = {**record.get("runtime", {}), "executor": self.name, "node": node_fingerprint()}
        return record


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


def _ray(settings: dict[str, Any]) -> Executor:
    from lab.execute.ray_driver import ray_executor

    return ray_executor(settings)


EXECUTORS: dict[str, Callable[[dict[str, Any]], Executor]] = {"local": lambda settings: LocalExecutor(), "ray": _ray}


def executor_for(settings: dict[str, Any]) -> Executor:
    """The executor the ``executor`` config group names.

    Raises:
        ConfigError: an unknown name (the known ones listed), or ``ray``
            without Ray installed or without a reachable cluster.
    """
    name = str(settings.get("name", "local"))
    make = EXECUTORS.get(name)
    if make is None:
        raise ConfigError(f"config: executor.name: unknown executor {name!r} (known: {', '.join(sorted(EXECUTORS))})")
    return make(settings)


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
