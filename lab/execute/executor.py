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

from collections.abc import Callable
from typing import Any, Protocol

from lab.errors import ConfigError

__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "executor_for", "node_fingerprint"]


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
    """A short fingerprint of this machine (host name, architecture, CPU count), not the name itself:
    a run's ``runtime.node`` (``lab.execute.harness.machine_id``)."""
    from lab.execute.harness import machine_id

    return machine_id()


class LocalExecutor:
    """Executes runs in this process, in the thread of the run action (``jobs`` at once)."""

    name = "local"

    def execute(self, ctx: Any, spec: Any) -> dict[str, Any] | None:
        from lab.execute.call_cap import local_call_gate
        from lab.execute.run import execute_run

        if ctx.call_gate is None:
            ctx.call_gate = local_call_gate(ctx.config.data["provider"], ctx.config.mode)
        record = execute_run(ctx, spec)
        record["runtime"] = {**record.get("runtime", {}), "executor": self.name, "node": node_fingerprint()}
        return record


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

