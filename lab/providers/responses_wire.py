"""Read OpenAI Responses-API answers: a response object, or its stream of named events.

The lab's built-in agent speaks chat completions (``lab.providers.wire``);
command agents may speak the Responses API through the gateway. Both are
read by the lab's one wire layer (``lab.providers.answer``); this module is
its Responses half.

Shapes read (https://platform.openai.com/docs/api-reference/responses-streaming)::

    response.created / response.in_progress        {"response": {...}}
    response.output_item.added / .done             {"output_index", "item": {...}}
    response.output_text.delta                     {"item_id", "output_index", "delta"}
    response.function_call_arguments.delta         {"item_id", "output_index", "delta"}
    response.completed / response.incomplete       {"response": {"output": [...], "usage": {...}}}
    response.failed                                {"response": {"error": {"code", "message"}}}
    error                                          {"code", "message", "param"} (or {"error": {...}})

The event's type is its SSE ``event:`` name, else the ``type`` field of its
data. A stream is *complete* when a final event (``response.completed``,
``response.incomplete`` or ``response.failed``) arrived. The answer text is
taken from the final response's ``output``; when that is empty (some servers
send ``output: []`` in ``response.completed``) from the items streamed with
``response.output_item.done``, and else from the text deltas. Usage is the
final response's ``usage`` (``lab.providers.usage`` reads ``input_tokens``,
``output_tokens`` and ``input_tokens_details.cached_tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.files import loads_json
from lab.providers.base import Usage
from lab.providers.faults import ServerError, error_from_object, one_line
from lab.providers.usage import implausible_zero, parse_usage

FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


@dataclass(frozen=True)
class ResponsesAnswer:
    """One Responses-API answer as read.

    Attributes:
        text: the output text (see the module docstring for where it comes from).
        tool_calls: ``function_call`` output items.
        complete: a final event arrived (always True for a response object).
        status: the final response's ``status`` (``completed``, ``incomplete``,
            ``failed``), or None.
        usage: the reported usage, or None (also for zeros that cannot be
            measurements: ``zero_usage``).
        zero_usage: usage was reported as 0 input tokens, or 0 output tokens beside output.
        error: the failure the answer carried (``response.failed``, an ``error``
            event, an ``error`` in the response object), or None.
        invalid: a description of data that is not a Responses answer, or None.
    """

    text: str
    tool_calls: int
    complete: bool
    status: str | None
    usage: Usage | None
    zero_usage: bool
    error: ServerError | None
    invalid: str | None = None


def event_type(data: str, name: str | None) -> str | None:
    """The type of one streamed event: its SSE name, else its data's ``type`` field."""
    if name:
        return name
    obj = _object(data)
    kind = obj.get("type") if obj is not None else None
    return kind if isinstance(kind, str) else None


def parse_response_object(body: Any) -> ResponsesAnswer:
    """Read a complete (not streamed) response object."""
    if not isinstance(body, dict):
        return _invalid(f"response body: expected an object, got {type(body).__name__}")
    error = error_from_object(body) if body.get("error") else None
    output = body.get("output")
    items = output if isinstance(output, list) else []
    text, calls = _items_text(items)
    status = body.get("status") if isinstance(body.get("status"), str) else None
    if error is None and status is None and output is None:
        return _invalid("response body: no \"output\", \"status\" or \"error\": not a response object")
    usage = parse_usage(body.get("usage"))
    zero = implausible_zero(usage, bool(text or calls))
    return ResponsesAnswer(text, calls, True, status, None if zero else usage, zero, error)


def parse_response_events(events: list[str], names: list[str] | None = None) -> ResponsesAnswer:
    """Read a streamed answer: SSE data fields in order, with their ``event:`` names when known."""
    names = names or [""] * len(events)
    deltas: list[str] = []
    streamed: dict[int, dict[str, Any]] = {}
    final: dict[str, Any] | None = None
    error: ServerError | None = None
    for number, (data, name) in enumerate(zip(events, names)):
        if not data.strip() or data.strip() == "[DONE]":
            continue
        obj = _object(data)
        if obj is None:
            if data.strip().startswith(("{", "[")):
                return _invalid(f"SSE event {number}: not JSON: {one_line(data, 200)}")
            continue  # a keep-alive sent as data
        kind = name or obj.get("type")
        if kind == "error":
            error = error or _error_event(obj)
        elif kind == "response.output_text.delta" and isinstance(obj.get("delta"), str):
            deltas.append(obj["delta"])
        elif kind == "response.output_item.done" and isinstance(obj.get("item"), dict):
            index = obj.get("output_index")
            streamed[index if isinstance(index, int) else len(streamed)] = obj["item"]
        elif kind in FINAL_EVENTS:
            response = obj.get("response")
            final = response if isinstance(response, dict) else {}
            if kind == "response.failed":
                error = error or error_from_object(final) or ServerError("response.failed without an error object")
            break
    if final is None:
        text, calls = _items_text([streamed[k] for k in sorted(streamed)])
        return ResponsesAnswer(text or "".join(deltas), calls, False, None, None, False, error)
    output = final.get("output")
    items = output if isinstance(output, list) and output else [streamed[k] for k in sorted(streamed)]
    text, calls = _items_text(items)
    text = text or "".join(deltas)
    usage = parse_usage(final.get("usage"))
    zero = implausible_zero(usage, bool(text or calls))
    status = final.get("status") if isinstance(final.get("status"), str) else None
    return ResponsesAnswer(text, calls, True, status, None if zero else usage, zero, error)


def _items_text(items: list[Any]) -> tuple[str, int]:
    parts: list[str] = []
    calls = 0
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            calls += 1
        elif item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    parts.append(part["text"])
    return "".join(parts), calls


def _error_event(obj: dict[str, Any]) -> ServerError:
    nested = error_from_object(obj)
    if nested is not None:
        return nested
    message = obj.get("message")
    code = obj.get("code")
    return ServerError(one_line(message) if isinstance(message, str) and message.strip() else "error event",
                       None, None if code in (None, "") else one_line(str(code), 80))


def _invalid(description: str) -> ResponsesAnswer:
    return ResponsesAnswer("", 0, False, None, None, False, None, description)


def _object(text: str) -> dict[str, Any] | None:
    try:
        obj = loads_json(text)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None
