"""The built-in agent loop (SPEC H1, H6): model call → tool calls → repeat.

One model call is one turn. The loop stops when the model answers without
tool calls, a budget is used up, the run is cancelled, or the provider fails;
every stop is a value in ``AgentResult.stop_reason``, never an exception.
Everything that happens is appended to an ordered event log (``EventLog``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lab.agents.builtin.budget import Budget, BudgetName, UsageTally
from lab.agents.builtin.compaction import compact, needs_compaction
from lab.agents.builtin.policy import Policy
from lab.agents.builtin.prompt import DEFAULT_SYSTEM_PROMPT
from lab.agents.builtin.result import (
    AgentResult,
    EventLog,
    StopReason,
    claim_of,
    divergence_error,
    encodable_completion,
    encodable_value,
    incomplete_error,
    provider_error,
)
from lab.agents.builtin.tool import ToolContext, ToolResult, run_tool
from lab.agents.builtin.tools import TOOLS, tool_schemas
from lab.errors import CassetteMiss, ProviderError, ProviderTimeout
from lab.files import loads_json
from lab.providers.base import Provider, ToolCall
from lab.providers.wire import parse_exchange
from lab.sandbox.base import SandboxBackend
from lab.sandbox.process import minimal_env

__all__ = ["DEFAULT_SYSTEM_PROMPT", "AgentResult", "AgentSettings", "run_agent"]

@dataclass(frozen=True)
class AgentSettings:
    """The measured configuration of the built-in agent (``conf/agent/builtin.yaml``)."""

    model: str
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tools: tuple[str, ...] = tuple(TOOLS)
    max_output_tokens: int = 4096
    temperature: float | None = None
    reasoning_effort: str | None = None
    compaction_enabled: bool = True
    compaction_threshold: float = 0.8
    max_context_chars: int = 200_000
    tool_output_chars: int = 16_000
    command_timeout_ms: int = 60_000
    send_reasoning: bool = False


@dataclass
class _Stop:
    reason: StopReason
    final: str | None = None
    budget: BudgetName | None = None
    error: dict[str, Any] | None = None


def run_agent(*, task_prompt: str, workspace: Path, provider: Provider, settings: AgentSettings,
              policy: Policy, budget: Budget, env: Mapping[str, str],
              cancel: threading.Event | None = None,
              clock: Callable[[], float] = time.monotonic,
              sandbox: SandboxBackend | None = None) -> AgentResult:
    """Run the built-in agent on one task until it answers or is stopped.

    Args:
        task_prompt: the task statement (the first user message, kept verbatim).
        workspace: the task copy the tools are confined to.
        provider: answers main and compaction calls (may be a cassette replayer).
        settings: model, prompt, tools, limits and compaction settings.
        policy: which tool effects are granted.
        budget: limits for this run; its wall clock starts here.
        env: the lab's environment. Commands never inherit it: they get
            ``minimal_env(workspace)`` with only ``PATH`` taken from ``env``.
        cancel: when set, the loop stops (``cancelled``) and commands are killed.
        clock: monotonic seconds for event latencies.
        sandbox: where ``run_command`` runs; commands then get only the
            backend's base environment (no variable of ``env``) and the
            network only when the policy grants ``external``. None: on the
            host (``none`` backend) with ``minimal_env(workspace)``.

    Returns:
        An ``AgentResult``; provider failures, replay divergence and incomplete
        responses are ``stop_reason="error"`` with ``error`` set.

    Raises:
        ConfigError: ``settings.tools`` names an unknown tool.
    """
    agent = _Agent(provider, settings, policy, budget, workspace, env, cancel, clock, sandbox)
    return agent.run(task_prompt)


class _Agent:
    def __init__(self, provider: Provider, settings: AgentSettings, policy: Policy,
                 budget: Budget, workspace: Path, env: Mapping[str, str],
                 cancel: threading.Event | None, clock: Callable[[], float],
                 sandbox: SandboxBackend | None = None) -> None:
        self.provider, self.settings, self.policy, self.budget = provider, settings, policy, budget
        self.cancel, self.clock, self.log = cancel, clock, EventLog()
        self.schemas = tool_schemas(settings.tools)
        if sandbox is None:
            path = {"PATH": env["PATH"]} if env.get("PATH") else None
            self.ctx = ToolContext(workspace, minimal_env(workspace, path),
                                   settings.tool_output_chars, settings.command_timeout_ms,
                                   budget.remaining_s, cancel)
        else:
            self.ctx = ToolContext(workspace, {}, settings.tool_output_chars,
                                   settings.command_timeout_ms, budget.remaining_s, cancel,
                                   sandbox=sandbox, network="external" in policy.allow)
        self.compaction_usage = UsageTally()
        self.messages: list[dict[str, Any]] = []

    def run(self, task_prompt: str) -> AgentResult:
        self.budget.start()
        self.messages = [{"role": "system", "content": self.settings.system_prompt},
                         {"role": "user", "content": task_prompt}]
        try:
            while (stop := self._turn()) is None:
                pass
        except CassetteMiss as exc:
            stop = _Stop("error", error=divergence_error(exc))
        except ProviderError as exc:
            self._log_retries(self.budget.turns + 1)
            if isinstance(exc, ProviderTimeout) and self.budget.exceeded() == "maxWallMs":
                stop = self._over("maxWallMs")  # the call was cut off by the wall budget
            else:
                stop = _Stop("error", error=provider_error(exc, self._retries()))
                if exc.partial is not None:  # what the answer carried before the error
                    stop.error = {**(stop.error or {}), "partial": exc.partial}
                    self.log.add("model_call", purpose="main", turn=self.budget.turns + 1,
                                 finishReason=None, toolCalls=len(exc.partial["toolCalls"]),
                                 usage=None, partial=exc.partial)
        usage = self.budget.usage
        return AgentResult(
            stop.reason, claim_of(stop.final) if stop.reason == "answered" else "none",
            stop.budget, stop.final, self.log.events, self.budget.turns, self.budget.tool_calls,
            usage.total(), usage.reported, usage.cached_reported,
            self.compaction_usage.total(), self.compaction_usage.calls, stop.error)

    def _check(self, before: Literal["turn", "tool_call"]) -> _Stop | None:
        if self.cancel is not None and self.cancel.is_set():
            return _Stop("cancelled")
        name = self.budget.exceeded(before=before)
        return self._over(name) if name is not None else None

    def _over(self, name: BudgetName) -> _Stop:
        self.log.incident("budget_exceeded", self.budget.describe(name))
        return _Stop("budget_exceeded", budget=name)

    def _turn(self) -> _Stop | None:
        if (stop := self._check("turn")) is not None:
            return stop
        turn = self.budget.turns + 1
        if self.settings.compaction_enabled:
            self._maybe_compact(turn)
            if (stop := self._check("turn")) is not None:
                return stop
        started = self.clock()
        done = parse_exchange(self.provider.send(
            self._request(), purpose="main", timeout_s=self.budget.remaining_s()))
        done, replaced = encodable_completion(done)
        first_unreported = self.budget.add_turn(done.usage)
        self._log_retries(turn)
        self.log.model_call("main", turn, done, round((self.clock() - started) * 1000), self._retries())
        if replaced:
            self.log.incident("unencodable_text", f"turn {turn}: {replaced} code point(s) UTF-8 cannot "
                              "encode (lone surrogates) replaced by U+FFFD")
        if first_unreported:
            what = ("reported 0 tokens for a call that carried a prompt and produced output (not a "
                    "measurement: read as not reported)" if done.zero_usage else "reported no usage")
            self.log.incident("usage_unreported", f"turn {turn}: the provider {what}; "
                              "maxTokens is not enforced for the rest of the run")
        if not done.complete:
            return _Stop("error", error=incomplete_error(turn, done))
        self.messages.append(done.assistant_message(include_reasoning=self.settings.send_reasoning))
        if not done.tool_calls:
            cut = done.finish_reason == "length"  # the output limit cut the answer
            if not cut and not (done.content or "").strip():
                self.log.incident("empty_response", f"turn {turn}: the model answered with no content "
                                  f"and no tool call (finish reason {done.finish_reason!r})")
            return _Stop("truncated" if cut else "answered", done.content)
        for call in done.tool_calls:
            if (stop := self._check("tool_call")) is not None:
                return stop
            self.budget.add_tool_call()
            self._tool_call(turn, call)
        return None

    def _log_retries(self, turn: int) -> None:
        """One ``retry`` event per retry the provider made for the last call, with its reason."""
        for retry in self._retries():
            self.log.add("retry", turn=turn, attempt=retry.get("attempt"), cause=retry.get("cause"),
                         status=retry.get("status"), reason=retry.get("reason"),
                         delayMs=round(float(retry.get("delay_s") or 0) * 1000))

    def _retries(self) -> list[dict[str, Any]]:
        """Retries the provider made for the last call (429/5xx backoff), as it recorded them."""
        return list(getattr(self.provider, "last_retries", None) or [])

    def _tool_call(self, turn: int, call: ToolCall) -> None:
        tool = TOOLS.get(call.name) if call.name in self.settings.tools else None
        arguments: Any = call.arguments
        outcome = "error"
        started = self.clock()
        if tool is None:
            result = ToolResult.failed(f"unknown tool {call.name!r}; available: "
                                       f"{', '.join(self.settings.tools)}")
        else:
            try:
                arguments = loads_json(call.arguments) if call.arguments.strip() else {}
            except json.JSONDecodeError as exc:
                result = ToolResult.failed(f"arguments are not valid JSON: {exc}")
            else:
                arguments, replaced = encodable_value(arguments)
                if replaced:
                    self.log.incident("unencodable_text", f"{call.name}: {replaced} code point(s) in the "
                                      "arguments UTF-8 cannot encode (lone surrogates) replaced by U+FFFD")
                result, outcome = self._permitted(tool.name, tool.effect, arguments)
        if outcome == "error":
            self.log.incident("tool_error", f"{call.name}: {result.error}")
        self.log.add("tool_call", turn=turn, id=call.id, tool=call.name, arguments=arguments,
                     effect=tool.effect if tool else None, outcome=outcome, error=result.error,
                     durationMs=int((self.clock() - started) * 1000))
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})

    def _permitted(self, name: str, effect: str, arguments: Any) -> tuple[ToolResult, str]:
        decision = self.policy.decide(effect)
        if decision.asked:
            self.log.add("approval", tool=name, effect=effect,
                         decision="granted" if decision.granted else "denied")
        if not decision.granted:
            if decision.asked:
                self.log.incident("approval_denied", f"{name}: {decision.reason}")
            return ToolResult.failed(decision.reason), "denied"
        result = run_tool(TOOLS[name], arguments, self.ctx)
        return result, "ok" if result.ok else "error"

    def _request(self) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": list(self.messages),
                                "tools": self.schemas, "max_tokens": s.max_output_tokens}
        if not self.schemas:
            del body["tools"]  # an empty list is refused by OpenAI-compatible servers
        optional = {"reasoning_effort": s.reasoning_effort, "temperature": s.temperature}
        return body | {key: value for key, value in optional.items() if value is not None}

    def _maybe_compact(self, turn: int) -> None:
        s = self.settings
        if not needs_compaction(self.messages, s.compaction_threshold, s.max_context_chars):
            return
        started = self.clock()
        done = compact(self.messages, provider=self.provider, model=s.model,
                       threshold=s.compaction_threshold, max_context_chars=s.max_context_chars,
                       max_output_tokens=s.max_output_tokens, timeout_s=self.budget.remaining_s())
        if done is None:
            return
        self.messages = done.messages
        self.compaction_usage.add(done.completion.usage)
        self._log_retries(turn)
        self.log.model_call("compaction", turn, done.completion,
                            round((self.clock() - started) * 1000))
        self.log.incident("compaction", f"turn {turn}: {done.summarised} earlier messages "
                          f"summarised; context {done.chars_before} -> {done.chars_after} chars")
