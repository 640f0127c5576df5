"""Parse and build OpenAI chat-completions wire shapes.

``parse_exchange`` turns an exchange (see ``lab.providers.base``) into a
``Completion``; the ``to_*`` builders do the reverse, so the scripted provider
emits exactly what a real server sends and replay runs the same parser.

Quirks of real servers the parser accepts (each has a test):

- a final usage-only chunk with ``"choices": []`` (``stream_options.include_usage``);
- tool-call arguments split over many chunks, ``id``/``name`` only in the first;
- several tool calls told apart by ``index``; chunks without ``index``
  continue the last call unless they carry a new ``id``;
- ``reasoning_content`` (or ``reasoning``) deltas;
- ``finish_reason`` ``""`` or ``"stop"`` on a turn that carries tool calls
  (the tool calls still count);
- usage in any place and shape ``lab.providers.usage`` reads, also inside
  ``x_groq`` or ``choices[0]``, merged field by field over the chunks;
  usage not sent stays None, never 0; zeros that cannot be measurements
  (0 input tokens, or 0 output tokens beside output) are not reported either
  (``Completion.zero_usage``);
- SSE data payloads that are not JSON (``: keepalive``, ``ping``, empty):
  skipped and counted (``Completion.skipped_frames``); a payload that starts
  like JSON (``{`` or ``[``) and does not parse still fails;
- an ``error`` the server sent in the stream (an ``error:`` line kept in the
  exchange's ``errors``, or an in-band error object after some content):
  the partial answer is kept (``ProviderError.partial``);
- fields of the assistant message and of each tool call that the lab does
  not interpret (continuation data): kept in ``Completion.extra`` /
  ``ToolCall.extra`` so they go back to the provider.

Errors:
    ProviderError(cause="server"): an in-band ``{"error": {...}}`` object in an
        HTTP 200 answer; the message starts with "in-band error" and quotes
        the server's message.
    ProviderResponseInvalid: anything else that is not a chat completion.

Source of the format: https://platform.openai.com/docs/api-reference/chat
(chat.completion and chat.completion.chunk objects).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from lab.errors import ProviderError, ProviderResponseInvalid
from lab.files import loads_json
from lab.providers.base import Completion, Exchange, ToolCall
from lab.providers.encode import DONE, dumps_compact
from lab.providers.usage import implausible_zero, merge_fields, parse_usage, usage_fields, usage_from_fields

__all__ = ["DONE", "parse_exchange", "parse_usage", "stream_partial"]

_EXCERPT_CHARS = 200
# The last stream parsed in each thread, keyed by its content (status, events, error lines):
# the provider parses an answer to check it, then the agent loop asks again for the same one.
_last_stream = threading.local()
# Fields the lab interprets; every other field is continuation data sent back verbatim.
# "annotations" and "refusal" are response-only (OpenAI), never part of a request message.
_MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", "reasoning_content", "reasoning",
                             "refusal", "annotations", "function_call", "audio"})
_CALL_FIELDS = frozenset({"index", "id", "type", "function"})
_FUNCTION_FIELDS = frozenset({"name", "arguments"})


def parse_exchange(exchange: Exchange) -> Completion:
    """Assemble one assistant turn from a recorded or live exchange.

    Args:
        exchange: ``{"type": "json", "status": int, "body": dict}`` or
            ``{"type": "sse", "status": int, "events": [str, ...]}`` where
            events are SSE data fields in order (``"[DONE]"`` included).

    Returns:
        The Completion. For SSE, ``complete`` is False when the stream has
        no non-empty ``finish_reason`` and either no ``[DONE]`` (it was cut
        off) or no content and no tool call (nothing was answered). The
        same stream (status, events and error lines equal) parsed again in
        the same thread gives back the same Completion without parsing.

    Raises:
        ProviderError: cause "server", an in-band error object.
        ProviderResponseInvalid: not an exchange / not a chat completion.
    """
    if not isinstance(exchange, dict):
        raise ProviderResponseInvalid(f"exchange: expected an object, got {type(exchange).__name__}")
    kind = exchange.get("type")
    if kind == "json":
        return _parse_body(exchange.get("body"))
    if kind == "sse":
        events = exchange.get("events")
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise ProviderResponseInvalid('exchange: field "events": expected a list of strings')
        errors = exchange.get("errors")
        key = (exchange.get("status"), tuple(events), tuple(errors) if isinstance(errors, list) else errors)
        last: tuple[Any, Completion] | None = getattr(_last_stream, "parsed", None)
        if last is not None and last[0] == key:  # the same stream again: the provider checked it,
            return last[1]                        # the agent loop reads it (a stream is parsed once)
        assembler = _StreamAssembler()
        if isinstance(errors, list) and errors:  # "error:" lines of the stream (not data fields)
            assembler.stream_error = "; ".join(_error_message(e) for e in errors)
        for number, data in enumerate(events):
            if assembler.done:
                break
            assembler.feed(number, data)
        completion = assembler.completion()
        _last_stream.parsed = (key, completion)
        return completion
    raise ProviderResponseInvalid(f'exchange: field "type": expected "json" or "sse", got {kind!r}')


def stream_partial(exchange: Exchange) -> dict[str, Any] | None:
    """What a streamed answer carried before an error object in it (``{"content", "toolCalls"}``),
    or None: not a stream, no error in it, or nothing before the error."""
    if not isinstance(exchange, dict) or exchange.get("type") != "sse":
        return None
    try:
        parse_exchange(exchange)
    except ProviderResponseInvalid:
        return None
    except ProviderError as exc:
        partial = exc.partial
        return partial if partial and (partial.get("content") or partial.get("toolCalls")) else None
    return None


@dataclass
class _CallBuilder:
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    function_extra: dict[str, Any] = field(default_factory=dict)


class _StreamAssembler:
    """Folds ``chat.completion.chunk`` objects into one Completion (choice 0 only)."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_CallBuilder] = []
        self.by_index: dict[int, int] = {}
        self.finish: str | None = None
        self.saw_empty_finish = False
        self.done = False
        self.usage: dict[str, int | float] = {}
        self.extra: dict[str, Any] = {}
        self.skipped = 0
        self.stream_error: str | None = None

    def feed(self, number: int, data: str) -> None:
        if data.strip() == DONE:
            self.done = True
            return
        where = f"SSE event {number}"
        if not data.strip().startswith(("{", "[")):
            self.skipped += 1  # a keep-alive sent as data (": keepalive", "ping", "")
            return
        try:
            chunk = loads_json(data)
        except json.JSONDecodeError as exc:
            raise ProviderResponseInvalid(f"{where}: not JSON ({exc.msg}): {_excerpt(data)}") from exc
        if not isinstance(chunk, dict):
            raise ProviderResponseInvalid(f"{where}: expected an object, got {_excerpt(data)}")
        if chunk.get("error"):
            self.stream_error = _error_message(chunk["error"])
            _raise_in_band_error(chunk, where, partial=self.completion().partial_json())
        groq = chunk.get("x_groq")
        for raw in (chunk.get("usage"), groq.get("usage") if isinstance(groq, dict) else None):
            self.usage = merge_fields(self.usage, usage_fields(raw))
        choices = chunk.get("choices")
        choices = [] if choices is None else choices
        if not isinstance(choices, list):
            raise ProviderResponseInvalid(f'{where}: field "choices": expected a list')
        for choice in choices:
            if not isinstance(choice, dict):
                raise ProviderResponseInvalid(f'{where}: field "choices[]": expected an object')
            if choice.get("index") in (0, None):
                self.usage = merge_fields(self.usage, usage_fields(choice.get("usage")))
                self._feed_choice(where, choice)

    def _feed_choice(self, where: str, choice: dict[str, Any]) -> None:
        delta = choice.get("delta")
        delta = {} if delta is None else delta
        if not isinstance(delta, dict):
            raise ProviderResponseInvalid(f'{where}: field "delta": expected an object')
        if isinstance(delta.get("content"), str):
            self.content.append(delta["content"])
        reasoning = delta.get("reasoning_content", delta.get("reasoning"))
        if isinstance(reasoning, str):
            self.reasoning.append(reasoning)
        _merge_extra(self.extra, _extras(delta, _MESSAGE_FIELDS))
        tool_calls = delta.get("tool_calls")
        tool_calls = [] if tool_calls is None else tool_calls
        if not isinstance(tool_calls, list):
            raise ProviderResponseInvalid(f'{where}: field "delta.tool_calls": expected a list')
        for entry in tool_calls:
            if not isinstance(entry, dict):
                raise ProviderResponseInvalid(f'{where}: field "delta.tool_calls[]": expected an object')
            self._feed_tool_call(entry)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self.finish = finish
        elif finish == "":
            self.saw_empty_finish = True

    def _feed_tool_call(self, entry: dict[str, Any]) -> None:
        raw_id = entry.get("id")
        call_id = raw_id if isinstance(raw_id, str) else ""
        index = entry.get("index")
        builder = self._select(index if isinstance(index, int) else None, call_id)
        if call_id and not builder.id:
            builder.id = call_id
        _merge_extra(builder.extra, _extras(entry, _CALL_FIELDS))
        function = entry.get("function") or {}
        if not isinstance(function, dict):
            return
        _merge_extra(builder.function_extra, _extras(function, _FUNCTION_FIELDS))
        name = function.get("name")
        if isinstance(name, str) and name and not builder.name:
            builder.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            builder.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a few servers send parsed arguments
            builder.arguments = [json.dumps(arguments)]

    def _select(self, index: int | None, call_id: str) -> _CallBuilder:
        if index is not None:
            position = self.by_index.get(index)
            if position is not None:
                current = self.calls[position]
                if not (call_id and current.id and call_id != current.id):
                    return current
            self.by_index[index] = len(self.calls)
        elif self.calls and not (call_id and call_id != self.calls[-1].id):
            return self.calls[-1]
        builder = _CallBuilder(id=call_id)
        self.calls.append(builder)
        return builder

    def completion(self) -> Completion:
        text = "".join(self.content)
        reasoning = "".join(self.reasoning)
        finish = self.finish if self.finish else ("" if self.saw_empty_finish else None)
        calls = tuple(ToolCall(id=b.id or f"call_{k}", name=b.name, arguments="".join(b.arguments),
                               extra=dict(b.extra), function_extra=dict(b.function_extra))
                      for k, b in enumerate(self.calls))
        # [DONE] alone is no answer: without a finish reason it needs content or a tool call.
        complete = bool(self.finish) or (self.done and bool(text or calls))
        usage = usage_from_fields(self.usage)
        zero = implausible_zero(usage, bool(text or calls))
        return Completion(content=text or None, tool_calls=calls, finish_reason=finish,
                          complete=complete, usage=None if zero else usage, zero_usage=zero,
                          reasoning_content=reasoning or None, extra=dict(self.extra),
                          skipped_frames=self.skipped, stream_error=self.stream_error)


def _parse_body(body: Any) -> Completion:
    if not isinstance(body, dict):
        raise ProviderResponseInvalid(f"response body: expected an object, got {type(body).__name__}")
    _raise_in_band_error(body, "response body")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderResponseInvalid(
            f'response body: field "choices": expected a non-empty list, got {_excerpt(dumps_compact(choices))}')
    choice = next((c for c in choices if isinstance(c, dict) and c.get("index") == 0), choices[0])
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ProviderResponseInvalid('response body: field "choices[0].message": expected an object')
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict)) or None
    if content is not None and not isinstance(content, str):
        raise ProviderResponseInvalid('response body: field "choices[0].message.content": expected a string')
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ProviderResponseInvalid('response body: field "choices[0].message.tool_calls": expected a list')
    reasoning = message.get("reasoning_content", message.get("reasoning"))
    finish = choice.get("finish_reason")
    tool_calls = tuple(_body_tool_call(c, k) for k, c in enumerate(raw_calls))
    usage = parse_usage(body.get("usage"))
    zero = implausible_zero(usage, bool(content or tool_calls))
    return Completion(content=content, extra=_extras(message, _MESSAGE_FIELDS), tool_calls=tool_calls,
                      finish_reason=finish if isinstance(finish, str) else None,
                      usage=None if zero else usage, zero_usage=zero,
                      reasoning_content=reasoning if isinstance(reasoning, str) and reasoning else None)


def _body_tool_call(raw: Any, position: int) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise ProviderResponseInvalid(
            f'response body: field "choices[0].message.tool_calls[{position}]": '
            'expected an object with "function"')
    function = raw["function"]
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    call_id, name = raw.get("id"), function.get("name")
    return ToolCall(id=call_id if isinstance(call_id, str) and call_id else f"call_{position}",
                    name=name if isinstance(name, str) else "",
                    arguments=arguments if isinstance(arguments, str) else "",
                    extra=_extras(raw, _CALL_FIELDS), function_extra=_extras(function, _FUNCTION_FIELDS))


def _error_message(error: Any) -> str:
    """The message of a wire error (an object with ``message``/``type``/``code``, or any value)."""
    if isinstance(error, str):
        try:
            error = loads_json(error)
        except json.JSONDecodeError:
            return _excerpt(error)
    if isinstance(error, dict) and isinstance(error.get("error"), (dict, str)):
        error = error["error"]
    if isinstance(error, dict):
        message = str(error.get("message") or dumps_compact(error))
        labels = [f"{k} {error[k]}" for k in ("type", "code") if error.get(k)]
        return _excerpt(message) + (f" ({', '.join(labels)})" if labels else "")
    return _excerpt(str(error))


def _raise_in_band_error(obj: dict[str, Any], where: str, partial: dict[str, Any] | None = None) -> None:
    error = obj.get("error")
    if not error:
        return
    raise ProviderError(f"{where}: in-band error after HTTP 200: {_error_message(error)}",
                        cause="server", partial=partial)


def _extras(obj: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The fields of ``obj`` the lab does not interpret (``null`` ones dropped)."""
    return {k: v for k, v in obj.items() if k not in known and v is not None}


def _merge_extra(into: dict[str, Any], fields: dict[str, Any]) -> None:
    """Stream deltas of an uninterpreted field: strings and lists concatenate, other values replace."""
    for key, value in fields.items():
        if value is None:
            continue
        old = into.get(key)
        if isinstance(old, str) and isinstance(value, str):
            into[key] = old + value
        elif isinstance(old, list) and isinstance(value, list):
            into[key] = old + value
        else:
            into[key] = value


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "…"
