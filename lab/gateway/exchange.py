"""Wire shapes the gateway passes along: SSE events, replies, exchanges.

An *exchange* is an answer as it came off the wire, the shape cassettes hold
(``lab.providers.base``), extended for the Responses API's named events::

    {"type": "json", "status": 200, "body": {...}}                 # not streamed
    {"type": "text", "status": 502, "text": "..."}                 # a body that is not JSON
    {"type": "sse",  "status": 200, "events": ["{...}", "[DONE]"]} # SSE data fields, in order
    {"type": "sse",  "status": 200, "events": [...],
     "eventNames": ["response.created", ...]}                      # when any event had a name
    … "complete": false                                            # a stream cut short
    … "complete": false, "abandoned": true                         # the lab stopped reading it

A stream is *abandoned* when the lab stopped reading it before it ended: the
agent hung up mid-stream, or the run ended while it was in flight (the
gateway also stops at an error event, which replay meets first). The
provider's usage comes at a stream's end, so an abandoned stream's is never
seen: the call counts as one without usage, and its replay ends the stream
where the recording ends, counted the same way (not a fault).

What an answer says (usage, completeness, fault) is read by the lab's one
wire layer, ``lab.providers.answer``, the same reading the built-in agent's
provider uses. Source of the shapes: OpenAI API reference,
https://platform.openai.com/docs/api-reference/chat and
https://platform.openai.com/docs/api-reference/responses-streaming.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from lab.files import loads_json
from lab.providers.answer import Fault
from lab.providers.base import Exchange
from lab.providers.responses_wire import FINAL_EVENTS
from lab.replay.normalise import Api

FINAL_RESPONSE_EVENTS = FINAL_EVENTS
OUTPUT_EVENT_PREFIXES = ("response.output_text.", "response.output_item.", "response.function_call_arguments.",
                         "response.reasoning", "response.content_part.", "response.refusal.")


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
        retry_after_s: the wait the provider asked for (``Retry-After`` /
            ``retry-after-ms``), or None.
        abandoned: the replay of a stream the lab stopped reading when it was
            recorded: its events end where the agent left, not in a fault.
    """

    status: int
    content_type: str = "application/json"
    body: bytes = b""
    events: AsyncGenerator[SseEvent, None] | None = None
    retry_after_s: float | None = None
    abandoned: bool = False


def body_exchange(status: int, body: bytes) -> Exchange:
    """The exchange of a complete body: ``json`` when it parses, else ``text``."""
    try:
        return {"type": "json", "status": status, "body": loads_json(body)}
    except (ValueError, UnicodeDecodeError):
        return {"type": "text", "status": status, "text": body.decode("utf-8", "replace")}


def sse_exchange(status: int, events: Sequence[SseEvent], *, complete: bool = True,
                 abandoned: bool = False) -> Exchange:
    """The exchange of a stream; ``eventNames`` only when some event was named; ``abandoned``
    (which implies ``complete: false``) when the lab stopped reading it before it ended."""
    exchange: Exchange = {"type": "sse", "status": status, "events": [e.data for e in events]}
    if any(e.event for e in events):
        exchange["eventNames"] = [e.event or "" for e in events]
    if not complete or abandoned:
        exchange["complete"] = False
    if abandoned:
        exchange["abandoned"] = True
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
        return UpstreamReply(status, "text/event-stream", events=_play(events),
                             abandoned=exchange.get("abandoned") is True)
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


def carries_output(api: Api, event: SseEvent) -> bool:
    """True for a streamed event that carries model output (text, reasoning or a tool call).

    The gateway holds back the events before the first such one, so a fault
    that comes before any output can still be retried.
    """
    obj = _json_object(event.data) if event.data.lstrip().startswith("{") else None
    if obj is None:
        return False
    if api == "responses":
        kind = event.event or obj.get("type")
        return isinstance(kind, str) and kind.startswith(OUTPUT_EVENT_PREFIXES)
    for choice in obj.get("choices") or []:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and any(delta.get(k) for k in ("content", "tool_calls", "reasoning_content",
                                                                  "reasoning", "refusal")):
            return True
    return False


def stream_error_event(api: Api, fault: Fault) -> SseEvent:
    """The event that tells the agent a stream failed, in its API's shape (the SDKs raise on it):
    chat ``{"error": {...}}``, Responses an ``error`` event."""
    error = {"message": fault.message, "type": "upstream_error", "code": fault.cause, "param": None}
    if api == "chat":
        return SseEvent(json.dumps({"error": error}, ensure_ascii=False))
    return SseEvent(json.dumps({"type": "error", **error}, ensure_ascii=False), "error")


def _json_object(text: str | bytes) -> dict[str, Any] | None:
    try:
        obj = loads_json(text)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None
