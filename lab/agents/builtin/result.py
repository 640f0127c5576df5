"""What one run of the built-in agent produced: its result and its event log (SPEC H6).

Event shapes (dicts, in order, each with a running ``seq``)::

    {"seq", "type": "model_call", "purpose": "main"|"compaction", "turn", "latencyMs",
     "finishReason", "toolCalls", "usage": {"inputTokens", "outputTokens",
     "cachedInputTokens"} | None}
    {"seq", "type": "tool_call", "turn", "id", "tool", "arguments" (parsed object, or
     the raw string when it is not valid JSON), "effect" (None for an unknown tool),
     "outcome": "ok"|"error"|"denied", "error": str | None, "durationMs": int}
    {"seq", "type": "approval", "tool", "effect", "decision": "denied"|"granted"}
    {"seq", "type": "incident", "kind", "detail"}
    {"seq", "type": "retry", "turn", "attempt", "cause", "status": int | None, "reason",
     "delayMs"}                      # the provider retried a transient fault

Incident kinds written by the harness: ``approval_denied``, ``usage_unreported``
(once per run), ``compaction``, ``budget_exceeded``, ``tool_error``,
``unencodable_text`` (lone surrogates from the model replaced by U+FFFD).
A ``model_call`` event may also carry ``skippedFrames`` (SSE keep-alives
skipped), ``partial`` (``{"content", "toolCalls"}`` of an answer that never
finished) and ``streamError`` (the server's error message in the stream);
``empty_response`` (an answer with no content and no tool call; whether the
run passes stays the verifiers' decision).
Turns are numbered from 1; a compaction call carries the turn it precedes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from lab.agents.builtin.budget import BudgetName
from lab.errors import CassetteMiss, ProviderError
from lab.files import encodable
from lab.providers.base import Completion, Usage

_SURROGATE = re.compile("[\ud800-\udfff]")
StopReason = Literal["answered", "budget_exceeded", "truncated", "cancelled", "error"]
Claim = Literal["success", "gave_up", "none"]


@dataclass(frozen=True)
class AgentResult:
    """How one run of the agent ended.

    Attributes:
        stop_reason: why the loop stopped.
        claim: the final message starts with ``DONE`` → success, ``GIVE UP`` →
            gave_up; otherwise, and on every other stop reason, none.
        budget_exceeded: the budget that stopped the run (``maxTurns`` …).
        final_message: the model's last answer text, if it answered.
        events: the ordered event log (H6 shapes, see ``EventLog``).
        turns, tool_calls: main model calls and tool calls made.
        usage: main-loop usage sum; None when any main turn lacked usage.
        usage_turns_reported, cached_turns_reported: main turns reporting
            usage / cached input tokens.
        compaction_usage: sum over compaction calls (None if none or unreported).
        compactions: compaction calls made.
        error: for stop ``error``: {"kind": "provider" | "replay_divergence" |
            "incomplete_response", "cause", "message"} plus, for a divergence,
            "callIndex", "field", "recorded", "actual".
    """

    stop_reason: StopReason
    claim: Claim
    budget_exceeded: BudgetName | None
    final_message: str | None
    events: list[dict[str, Any]]
    turns: int
    tool_calls: int
    usage: Usage | None
    usage_turns_reported: int
    cached_turns_reported: int
    compaction_usage: Usage | None
    compactions: int
    error: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """camelCase keys; usage blocks as ``Usage.to_json`` or None."""
        return {
            "stopReason": self.stop_reason, "claim": self.claim,
            "budgetExceeded": self.budget_exceeded, "finalMessage": self.final_message,
            "turns": self.turns, "toolCalls": self.tool_calls,
            "usage": None if self.usage is None else self.usage.to_json(),
            "usageTurnsReported": self.usage_turns_reported,
            "cachedTurnsReported": self.cached_turns_reported,
            "compactionUsage": (None if self.compaction_usage is None
                                else self.compaction_usage.to_json()),
            "compactions": self.compactions, "error": self.error, "events": self.events,
        }


class EventLog:
    """Appends H6 events with a running ``seq``."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, type_: str, **fields: Any) -> None:
        self.events.append({"seq": len(self.events), "type": type_, **fields})

    def incident(self, kind: str, detail: str) -> None:
        self.add("incident", kind=kind, detail=detail)

    def model_call(self, purpose: str, turn: int, done: Completion, latency_ms: int,
                   retries: list[dict[str, Any]] | None = None) -> None:
        fields: dict[str, Any] = {"retries": retries} if retries else {}
        if done.skipped_frames:
            fields["skippedFrames"] = done.skipped_frames
        if not done.complete:
            fields["partial"] = done.partial_json()
        if done.stream_error is not None:
            fields["streamError"] = done.stream_error
        self.add("model_call", purpose=purpose, turn=turn, latencyMs=latency_ms,
                 finishReason=done.finish_reason, toolCalls=len(done.tool_calls),
                 usage=None if done.usage is None else done.usage.to_json(), **fields)


def claim_of(text: str | None) -> Claim:
    """``DONE…`` → success, ``GIVE UP…`` → gave_up, else none (leading markdown ignored)."""
    head = (text or "").lstrip(" \t\r\n*_#>`")
    if head.startswith("DONE"):
        return "success"
    return "gave_up" if head.startswith("GIVE UP") else "none"


def incomplete_error(turn: int, done: Completion) -> dict[str, Any]:
    """``AgentResult.error`` for an answer that never finished; keeps what it carried.

    Returns:
        ``{"kind": "incomplete_response", "cause", "message", "partial": {"content",
        "toolCalls"}}``; the message quotes the server's own error, if it sent one.
    """
    what = ("the stream carried no answer (no finish reason, content or tool call)"
            if done.content is None and not done.tool_calls else "the response ended before its finish reason")
    message = f"turn {turn}: {what}"
    if done.stream_error is not None:
        message += f"; the server reported: {done.stream_error}"
    return {"kind": "incomplete_response", "cause": "incomplete_response", "message": message,
            "partial": done.partial_json()}


def encodable_completion(done: Completion) -> tuple[Completion, int]:
    """``done`` with lone surrogates in its text and tool-call arguments replaced by U+FFFD.

    A model may send ``"\\udc00"`` (valid JSON, not encodable as UTF-8); it
    would otherwise crash the file writers, subprocess arguments and XML.

    Returns:
        (the cleaned completion, number of code points replaced).
    """
    texts = [done.content or "", done.reasoning_content or ""] + [c.arguments for c in done.tool_calls]
    count = sum(len(_SURROGATE.findall(t)) for t in texts)
    if not count:
        return done, 0
    calls = tuple(replace(c, arguments=encodable(c.arguments)) for c in done.tool_calls)
    return replace(done, content=None if done.content is None else encodable(done.content),
                   reasoning_content=None if done.reasoning_content is None else encodable(done.reasoning_content),
                   tool_calls=calls), count


def encodable_value(value: Any) -> tuple[Any, int]:
    """A parsed JSON value with lone surrogates in every string (keys too) replaced by U+FFFD.

    Tool-call arguments may hold ``"\\udc00"`` as a JSON escape, which only
    becomes a lone surrogate once parsed.

    Returns:
        (the cleaned value, number of code points replaced).
    """
    if isinstance(value, str):
        count = len(_SURROGATE.findall(value))
        return (encodable(value) if count else value), count
    if isinstance(value, list):
        items = [encodable_value(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        pairs = [(encodable_value(k), encodable_value(v)) for k, v in value.items()]
        return {k: v for (k, _), (v, _) in pairs}, sum(a + b for (_, a), (_, b) in pairs)
    return value, 0
def provider_error(exc: ProviderError, retries: list[dict[str, Any]]) -> dict[str, Any]:
    """``AgentResult.error`` for a provider failure: kind, cause, one-line message, the retries
    made, and the server's HTTP ``status`` and error ``type``/``code``/``message`` when it sent them."""
    error: dict[str, Any] = {"kind": "provider", "cause": exc.cause,
                             "message": " ".join(str(exc).split()), "retries": retries}
    if exc.status is not None:
        error["status"] = exc.status
    if exc.server is not None:
        error["server"] = dict(exc.server)
    return error


def divergence_error(exc: CassetteMiss) -> dict[str, Any]:
    """``AgentResult.error`` for a replay divergence (fields from the CassetteMiss)."""
    return {"kind": "replay_divergence", "cause": "replay_divergence", "message": str(exc),
            "callIndex": exc.call_index, "field": exc.field, "recorded": exc.recorded,
            "actual": exc.actual}
