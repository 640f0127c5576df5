"""A ``Completion`` as chat-completions wire data: one JSON body, or SSE chunks (the inverse of ``wire``).

The scripted provider and the gateway's scripted upstream answer with what a
real OpenAI-compatible server would send, so replay and parsing run the same
code for scripted and live traffic.
"""

from __future__ import annotations

import json
from typing import Any

from lab.providers.base import Completion, Exchange, Usage

DONE = "[DONE]"


def completion_to_exchange(completion: Completion, *, stream: bool, response_id: str,
                           model: str, piece_chars: int = 16) -> Exchange:
    """Build the exchange a real server would send for ``completion``.

    Args:
        completion: the turn to encode (``extra`` and ``complete`` are ignored).
        stream: True for the SSE shape, False for one JSON body.
        response_id: the ``id`` field of the body / every chunk.
        model: the ``model`` field.
        piece_chars: SSE only: content, reasoning and arguments are split
            into deltas of at most this many characters.

    Returns:
        A JSON-serialisable exchange; ``created`` is always 0 so the bytes
        are deterministic.
    """
    if stream:
        events = to_sse_events(completion, response_id=response_id, model=model,
                               piece_chars=piece_chars)
        return {"type": "sse", "status": 200, "events": events}
    return {"type": "json", "status": 200,
            "body": to_json_body(completion, response_id=response_id, model=model)}


def to_json_body(completion: Completion, *, response_id: str, model: str) -> dict[str, Any]:
    """The ``chat.completion`` object for ``completion`` (non-streaming shape)."""
    message = completion.assistant_message()
    if completion.reasoning_content is not None:
        message["reasoning_content"] = completion.reasoning_content
    body: dict[str, Any] = {
        "id": response_id, "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": completion.finish_reason}],
    }
    if completion.usage is not None:
        body["usage"] = usage_to_wire(completion.usage)
    return body


def to_sse_events(completion: Completion, *, response_id: str, model: str,
                  piece_chars: int = 16) -> list[str]:
    """The SSE data fields a streaming server sends for ``completion``.

    Order: a role delta, reasoning deltas, content deltas, per tool call a
    first delta carrying index/id/type/name and empty arguments then argument
    pieces carrying only index, a finish chunk, a usage-only chunk with empty
    ``choices`` (when usage is known), and ``[DONE]``. Each data field is
    compact JSON.
    """
    head = {"id": response_id, "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return dumps_compact({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": p})
               for p in _pieces(completion.reasoning_content, piece_chars)]
    events += [chunk({"content": p}) for p in _pieces(completion.content, piece_chars)]
    for index, call in enumerate(completion.tool_calls):
        events.append(chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                             "function": {"name": call.name, "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                   for p in _pieces(call.arguments, piece_chars)]
    events.append(chunk({}, completion.finish_reason))
    if completion.usage is not None:
        events.append(dumps_compact({**head, "choices": [], "usage": usage_to_wire(completion.usage)}))
    events.append(DONE)
    return events


def usage_to_wire(usage: Usage) -> dict[str, Any]:
    """Usage in wire shape; fields that are None are left out."""
    wire: dict[str, Any] = {}
    if usage.input_tokens is not None:
        wire["prompt_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        wire["completion_tokens"] = usage.output_tokens
    if usage.input_tokens is not None and usage.output_tokens is not None:
        wire["total_tokens"] = usage.input_tokens + usage.output_tokens
    details: dict[str, int] = {}
    if usage.cached_input_tokens is not None:
        details["cached_tokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens is not None:
        details["cache_write_tokens"] = usage.cache_write_tokens
    if details:
        wire["prompt_tokens_details"] = details
    if usage.provider_cost_usd is not None:
        wire["cost"] = usage.provider_cost_usd
    return wire


def _pieces(text: str | None, size: int) -> list[str]:
    if not text:
        return []
    step = max(1, size)
    return [text[i:i + step] for i in range(0, len(text), step)]


def dumps_compact(obj: Any) -> str:
    """Compact JSON (no spaces, UTF-8 kept), as servers send it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


__all__ = ["DONE", "completion_to_exchange", "dumps_compact", "to_json_body", "to_sse_events", "usage_to_wire"]
