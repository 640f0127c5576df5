"""Helpers for the agent tests: script builders and a loop runner with test defaults."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lab.agents.builtin.budget import Budget
from lab.agents.builtin.loop import AgentSettings, run_agent
from lab.agents.builtin.policy import Policy
from lab.agents.builtin.result import AgentResult
from lab.providers.scripted import ScriptedProvider
from lab.sandbox.process import minimal_env

PY = sys.executable


def scripted(*turns: dict[str, Any], stream: bool = False) -> ScriptedProvider:
    """The real scripted provider playing ``turns``."""
    return ScriptedProvider(script(*turns), stream=stream)


def script(*turns: dict[str, Any]) -> dict[str, Any]:
    """A P2 script from turns like ``call("read_file", path="a.py")`` or ``answer("DONE")``."""
    return {"schemaVersion": 1, "taskId": "t", "turns": list(turns)}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A turn with one tool call."""
    return {"toolCalls": [{"name": name, "arguments": arguments}]}


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A turn with several tool calls."""
    return {"toolCalls": [{"name": n, "arguments": a} for n, a in pairs]}


def answer(text: str) -> dict[str, Any]:
    return {"content": text}


TASK = "Fix the off-by-one in calc.py so total(3) == 6."


class Recording:
    """Passes calls to a real provider and keeps what the harness sent."""

    def __init__(self, inner: Any, on_send: Any = None) -> None:
        self.inner, self.on_send, self.name = inner, on_send, "recording"
        self.sent: list[tuple[str, dict[str, Any], float | None]] = []

    def send(self, request: dict[str, Any], *, purpose: str = "main",
             timeout_s: float | None = None) -> dict[str, Any]:
        self.sent.append((purpose, json.loads(json.dumps(request)), timeout_s))
        if self.on_send is not None:
            self.on_send(len(self.sent) - 1, purpose)
        return self.inner.send(request, purpose=purpose, timeout_s=timeout_s)

    def requests(self, purpose: str = "main") -> list[dict[str, Any]]:
        return [r for p, r, _ in self.sent if p == purpose]


def run(workspace: Path, provider: Any, *, policy: Policy | None = None,
        budget: Budget | None = None, settings: AgentSettings | None = None,
        task: str = TASK, **kwargs: Any) -> AgentResult:
    """Run the real loop with defaults that grant write and process."""
    return run_agent(
        task_prompt=task, workspace=workspace, provider=provider,
        settings=settings or AgentSettings(model="test-model"),
        policy=policy or Policy("auto", frozenset({"write", "process"})),
        budget=budget or Budget(max_turns=20, max_wall_ms=60_000),
        env=minimal_env(workspace), **kwargs)


def of_type(result: AgentResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == kind]


def incidents(result: AgentResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == "incident" and e["kind"] == kind]
