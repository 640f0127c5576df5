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
- usage with cached input as ``prompt_tokens_details.cached_tokens`` or
  ``prompt_cache_hit_tokens``; usage not sent stays None, never 0.

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
from dataclasses import dataclass, field
from typing import Any

from lab.errors import ProviderError, ProviderResponseInvalid
from lab.providers.base import Completion, Exchange, ToolCall, Usage

DONE = "[DONE]"
_EXCERPT_CHARS = 200


def parse_exchange(exchange: Exchange) -> Completion:
    """Assemble one assistant turn from a recorded or live exchange.

    Args:
        exchange: ``{"type": "json", "status": int, "body": dict}`` or
            ``{"type": "sse", "status": int, "events": [str, ...]}`` where
            events are SSE data fields in order (``"[DONE]"`` included).

    Returns:
        The Completion. For SSE, ``complete`` is False when the stream has
        neither a non-empty ``finish_reason`` nor ``[DONE]`` (it was cut off).

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
        assembler = _StreamAssembler()
        for number, data in enumerate(events):
            if assembler.done:
                break
            assembler.feed(number, data)
        return assembler.completion()
    raise ProviderResponseInvalid(f'exchange: field "type": expected "json" or "sse", got {kind!r}')


def parse_usage(raw: Any) -> Usage | None:
    """Read a wire ``usage`` object; None when absent or when it reports nothing.

    Cached input comes from ``prompt_tokens_details.cached_tokens`` (OpenAI),
    else ``prompt_cache_hit_tokens`` (DeepSeek). Counts that are not
    non-negative integers are treated as not reported.
    """
    if not isinstance(raw, dict):
        return None
    input_tokens = _count(raw.get("prompt_tokens", raw.get("input_tokens")))
    output_tokens = _count(raw.get("completion_tokens", raw.get("output_tokens")))
    cached: int | None = None
    for details_key in ("prompt_tokens_details", "input_tokens_details"):
        details = raw.get(details_key)
        if cached is None and isinstance(details, dict):
            cached = _count(details.get("cached_tokens"))
    if cached is None:
        cached = _count(raw.get("prompt_cache_hit_tokens"))
    if input_tokens is None and output_tokens is None and cached is None:
        return None
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cached_input_tokens=cached)


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
        return _dumps({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

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
        events.append(_dumps({**head, "choices": [], "usage": usage_to_wire(completion.usage)}))
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
    if usage.cached_input_tokens is not None:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    return wire


@dataclass
class _CallBuilder:
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)


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
        self.usage: Usage | None = None

    def feed(self, number: int, data: str) -> None:
        if data.strip() == DONE:
            self.done = True
            return
        where = f"SSE event {number}"
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ProviderResponseInvalid(f"{where}: not JSON ({exc.msg}): {_excerpt(data)}") from exc
        if not isinstance(chunk, dict):
            raise ProviderResponseInvalid(f"{where}: expected an object, got {_excerpt(data)}")
        _raise_in_band_error(chunk, where)
        usage = parse_usage(chunk.get("usage"))
        groq = chunk.get("x_groq")
        if usage is None and isinstance(groq, dict):
            usage = parse_usage(groq.get("usage"))
        if usage is not None:
            self.usage = usage  # some servers repeat cumulative usage; the last one wins
        choices = chunk.get("choices")
        choices = [] if choices is None else choices
        if not isinstance(choices, list):
            raise ProviderResponseInvalid(f'{where}: field "choices": expected a list')
        for choice in choices:
            if not isinstance(choice, dict):
                raise ProviderResponseInvalid(f'{where}: field "choices[]": expected an object')
            if choice.get("index") in (0, None):
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
        function = entry.get("function") or {}
        if not isinstance(function, dict):
            return
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
        calls = tuple(ToolCall(id=b.id or f"call_{k}", name=b.name, arguments="".join(b.arguments))
                      for k, b in enumerate(self.calls))
        return Completion(content=text or None, tool_calls=calls, finish_reason=finish,
                          complete=self.done or bool(self.finish), usage=self.usage,
                          reasoning_content=reasoning or None)


def _parse_body(body: Any) -> Completion:
    if not isinstance(body, dict):
        raise ProviderResponseInvalid(f"response body: expected an object, got {type(body).__name__}")
    _raise_in_band_error(body, "response body")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderResponseInvalid(
            f'response body: field "choices": expected a non-empty list, got {_excerpt(_dumps(choices))}')
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
    return Completion(content=content,
                      tool_calls=tuple(_body_tool_call(c, k) for k, c in enumerate(raw_calls)),
                      finish_reason=finish if isinstance(finish, str) else None,
                      usage=parse_usage(body.get("usage")),
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
                    arguments=arguments if isinstance(arguments, str) else "")


def _raise_in_band_error(obj: dict[str, Any], where: str) -> None:
    error = obj.get("error")
    if not error:
        return
    if isinstance(error, dict):
        message = str(error.get("message") or _dumps(error))
        labels = [f"{k} {error[k]}" for k in ("type", "code") if error.get(k)]
        suffix = f" ({', '.join(labels)})" if labels else ""
    else:
        message, suffix = str(error), ""
    raise ProviderError(f"{where}: in-band error after HTTP 200: {_excerpt(message)}{suffix}",
                        cause="server")


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _pieces(text: str | None, size: int) -> list[str]:
    if not text:
        return []
    step = max(1, size)
    return [text[i:i + step] for i in range(0, len(text), step)]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "…"
