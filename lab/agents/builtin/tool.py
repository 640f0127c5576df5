"""A tool of the built-in agent: its record, the context it runs in, its result, and running one.

``run_tool`` validates the arguments against the tool's JSON schema and turns
every misuse (``ToolError``, ``PolicyViolation``, ``ProcessStartError``) into
an ``error: <message>`` observation for the model; the tools themselves live
in :mod:`lab.agents.builtin.tools`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator

from lab.errors import PolicyViolation, ProcessStartError, ToolError
from lab.sandbox.base import SandboxBackend
from lab.sandbox.none import NoneBackend

Effect = Literal["read", "write", "process", "external", "analysis"]


EFFECTS: tuple[Effect, ...] = ("read", "write", "process", "external", "analysis")


@dataclass(frozen=True)
class ToolContext:
    """What a tool may touch during one run.

    Attributes:
        workspace: the task copy; every path is confined to it.
        env: the task's declared variables for ``run_command`` children, set
            over the sandbox backend's base environment (``PATH``, ``HOME`` …).
        output_chars: bound on the text a tool returns (``limits.tool_output_chars``).
        command_timeout_ms: cap on one command (``limits.command_timeout_ms``).
        remaining_s: seconds left in the run's wall budget (None = unbounded).
        cancel: when set, a running command is killed.
        sandbox: where ``run_command`` runs (``SandboxBackend.wrap``); files
            the tools create are handed to it with ``prepare``. Default: the
            host itself (``none``).
        network: commands get the network (the policy grants ``external``).
    """

    workspace: Path
    env: Mapping[str, str]
    output_chars: int
    command_timeout_ms: int
    remaining_s: Callable[[], float | None] = lambda: None
    cancel: threading.Event | None = None
    sandbox: SandboxBackend = field(default_factory=NoneBackend)
    network: bool = False


@dataclass(frozen=True)
class ToolResult:
    """An observation for the model; ``error`` is set when the call failed."""

    text: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failed(cls, message: str) -> ToolResult:
        return cls(f"error: {message}", message)


@dataclass(frozen=True)
class Tool:
    """One tool: its model-facing schema, its effect and its implementation."""

    name: str
    description: str
    parameters: dict[str, Any]
    effect: Effect
    handler: Callable[[dict[str, Any], ToolContext], ToolResult]

    def schema(self) -> dict[str, Any]:
        """The chat-completions ``tools`` entry."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


def run_tool(tool: Tool, arguments: Any, ctx: ToolContext) -> ToolResult:
    """Validate ``arguments`` against the tool's schema and run it.

    Returns:
        The tool's result; a ``ToolError``, ``PolicyViolation`` or
        ``ProcessStartError`` becomes ``ToolResult.failed`` (``error: …``).
    """
    problem = _argument_problem(tool, arguments)
    if problem is not None:
        return ToolResult.failed(f"invalid arguments for {tool.name}: {problem}")
    try:
        return tool.handler(arguments, ctx)
    except (ToolError, PolicyViolation, ProcessStartError) as exc:
        return ToolResult.failed(str(exc))


def _argument_problem(tool: Tool, arguments: Any) -> str | None:
    errors = sorted(Draft202012Validator(tool.parameters).iter_errors(arguments),
                    key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return None
    where = ".".join(map(str, errors[0].absolute_path))
    return f"{where}: {errors[0].message}" if where else errors[0].message


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def display_path(ctx: ToolContext, target: Path) -> str:
    rel = target.relative_to(ctx.workspace.resolve()).as_posix()
    return rel or "."


def bound_text(text: str, limit: int, hint: str) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[truncated: {len(text) - limit} more chars not shown; {hint}]"


def os_tool_error(action: str, rel: str, exc: OSError) -> ToolError:
    return ToolError(f"cannot {action} {rel!r}: {exc.strerror or exc}")
