"""Wire shapes the gateway passes along: SSE events, replies, exchanges, usage.

An *exchange* is an answer as it came off the wire, the shape cassettes hold
(``lab.providers.base``), extended for the Responses API's named events::

    {"type": "json", "status": 200, "body": {...}}                 # not streamed
    {"type": "text", "status": 502, "text": "..."}                 # a body that is not JSON
    {"type": "sse",  "status": 200, "events": ["{...}", "[DONE]"]} # SSE data fields, in order
    {"type": "sse",  "status": 200, "events": [...],
     "eventNames": ["response.created", ...]}                      # when any event had a name
    … "complete": false                                            # a stream cut short

Usage (SPEC M4) comes from the provider only: chat completions report it in
``usage`` (the last SSE chunk when streamed, with
``stream_options.include_usage``); the Responses API in ``usage`` of the
response object, streamed inside ``response.completed`` (or
``response.incomplete`` / ``response.failed``). Source: OpenAI API reference,
https://platform.openai.com/docs/api-reference/chat and
https://platform.openai.com/docs/api-reference/responses-streaming.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from lab.providers.base import Exchange, Usage
from lab.providers.wire import parse_usage
from lab.replay.normalise import Api

FINAL_RESPONSE_EVENTS = ("response.completed", "response.incomplete", "response.failed")


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event.

    Attributes:
        data: the data field (lines joined by ``\\n``), e.g. a JSON chunk or ``[DONE]``.
        event: the ``event:`` name, or None for unnamed (``message``) events.
    """

    data: str
    event: str | None = None

    def encode(self) -> bytes:
        """The event on the wire: ``event: <name>`` (when named), ``data:`` lines, a blank line."""
        lines = [f"event: {self.event}"] if self.event else []
        lines += [f"data: {line}" for line in self.data.split("\n")]
        return ("\n".join(lines) + "\n\n").encode("utf-8")


@dataclass
class UpstreamReply:
    """An upstream's answer to one call.

    Attributes:
        status: HTTP status code.
        content_type: the ``Content-Type`` to answer with.
        body: the complete body when not streamed.
        events: the SSE events as they arrive when streamed (status 2xx and
            ``text/event-stream``); the consumer must ``aclose()`` it.
    """

    status: int
    content_type: str = "application/json"
    body: bytes = b""
    events: AsyncGenerator[SseEvent, None] | None = None


def body_exchange(status: int, body: bytes) -> Exchange:
    """The exchange of a complete body: ``json`` when it parses, else ``text``."""
    try:
        return {"type": "json", "status": status, "body": json.loads(body)}
    except (ValueError, UnicodeDecodeError):
        return {"type": "text", "status": status, "text": body.decode("utf-8", "replace")}


def sse_exchange(status: int, events: Sequence[SseEvent], *, complete: bool = True) -> Exchange:
    """The exchange of a stream; ``eventNames`` only when some event was named."""
    exchange: Exchange = {"type": "sse", "status": status, "events": [e.data for e in events]}
    if any(e.event for e in events):
        exchange["eventNames"] = [e.event or "" for e in events]
    if not complete:
        exchange["complete"] = False
    return exchange


def reply_from_exchange(exchange: Exchange) -> UpstreamReply:
    """An :class:`UpstreamReply` that plays a recorded exchange back verbatim.

    Raises:
        ValueError: an exchange of unknown ``type`` or with mismatched ``eventNames``.
    """
    status = int(exchange.get("status", 200))
    kind = exchange.get("type")
    if kind == "json":
        return UpstreamReply(status, body=json.dumps(exchange["body"], ensure_ascii=False).encode("utf-8"))
    if kind == "text":
        return UpstreamReply(status, "text/plain; charset=utf-8", body=str(exchange["text"]).encode("utf-8"))
    if kind == "sse":
        data = [str(d) for d in exchange["events"]]
        names = list(exchange.get("eventNames") or [""] * len(data))
        if len(names) != len(data):
            raise ValueError(f"exchange: eventNames has {len(names)} entries for {len(data)} events")
        events = [SseEvent(d, n or None) for d, n in zip(data, names)]
        return UpstreamReply(status, "text/event-stream", events=_play(events))
    raise ValueError(f'exchange: field "type": expected "json", "text" or "sse", got {kind!r}')


async def _play(events: list[SseEvent]) -> AsyncGenerator[SseEvent, None]:
    for event in events:
        yield event


def is_terminal(api: Api, event: SseEvent) -> bool:
    """True for the event that ends a well-formed stream: ``[DONE]`` (chat) or a final response event.

    The gateway settles its accounts and recordings *before* passing this
    event on, so an agent that exits as soon as it sees it leaves nothing
    unsettled.
    """
    if api == "chat":
        return event.data.strip() == "[DONE]"
    if event.event is not None:
        return event.event in FINAL_RESPONSE_EVENTS
    obj = _json_object(event.data) if '"type"' in event.data else None
    return obj is not None and obj.get("type") in FINAL_RESPONSE_EVENTS


class UsageTap:
    """Finds the provider-reported usage in an answer as it passes.

    Args:
        api: the wire format of the answer.

    Attributes:
        usage: the last usage seen, or None when none was reported.
    """

    def __init__(self, api: Api) -> None:
        self.api = api
        self.usage: Usage | None = None

    def feed_event(self, event: SseEvent) -> None:
        """Look at one streamed event (cheap: only events mentioning ``usage`` are parsed)."""
        if '"usage"' not in event.data:
            return
        obj = _json_object(event.data)
        if obj is None:
            return
        if self.api == "chat":
            raw = obj.get("usage")
        elif (event.event or obj.get("type")) in FINAL_RESPONSE_EVENTS and isinstance(obj.get("response"), dict):
            raw = obj["response"].get("usage")
        else:
            return
        usage = parse_usage(raw)
        if usage is not None:
            self.usage = usage

    def feed_body(self, body: bytes) -> None:
        """Look at a complete JSON body (chat completion or response object)."""
        obj = _json_object(body)
        if obj is not None:
            self.usage = parse_usage(obj.get("usage")) or self.usage


def _json_object(text: str | bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None
