"""A scripted OpenAI-compatible provider for tests: chat completions and the Responses API.

Install :class:`ScriptedStub` as the handler of a ``LocalHTTPServer``: call
``n`` (0-based, counted by the stub) answers ``turns[n]`` (the last turn
again past the end) in the shape the request asks for — ``/v1/chat/completions``
or ``/v1/responses``, streamed (``"stream": true``) or not::

    stub = ScriptedStub([Turn(calls=(("write_file", {"path": "a", "content": "b"}),)),
                         Turn(text="done")])
    server.handler = stub

Ids are deterministic: chat ``chatcmpl-<n>`` with tool-call ids
``call_<n>_<j>``; responses ``resp_<n>``, items ``fc_<n>_<j>`` / ``msg_<n>``
with ``call_id`` ``call_<n>_<j>``. Usage is ``Turn.usage`` (input, output)
or absent when None. Chat streams end with a usage chunk and ``[DONE]``;
Responses streams send named events ending with ``response.completed``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from lab.providers.base import Completion, ToolCall, Usage
from lab.providers.encode import completion_to_exchange
from tests.helpers.http_server import Request, Response


@dataclass(frozen=True)
class Turn:
    """One scripted answer: text, tool calls (name, arguments object), or both."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    usage: tuple[int, int] | None = (10, 5)


def chat_exchange(turn: Turn, n: int, model: str, stream: bool) -> dict[str, Any]:
    """The chat-completions exchange for ``turn`` as call ``n``."""
    usage = Usage(*turn.usage) if turn.usage else None
    calls = tuple(ToolCall(f"call_{n}_{j}", name, json.dumps(args)) for j, (name, args) in enumerate(turn.calls))
    completion = Completion(turn.text, calls, "tool_calls" if calls else "stop", usage=usage)
    return completion_to_exchange(completion, stream=stream, response_id=f"chatcmpl-{n}", model=model)


def responses_exchange(turn: Turn, n: int, model: str, stream: bool) -> dict[str, Any]:
    """The Responses-API exchange for ``turn`` as call ``n`` (named SSE events when streamed)."""
    items: list[dict[str, Any]] = []
    if turn.text is not None:
        items.append({"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
    for j, (name, args) in enumerate(turn.calls):
        items.append({"type": "function_call", "id": f"fc_{n}_{j}", "call_id": f"call_{n}_{j}",
                      "name": name, "arguments": json.dumps(args), "status": "completed"})
    response: dict[str, Any] = {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": model,
                                "status": "completed", "output": items}
    if turn.usage is not None:
        i, o = turn.usage
        response["usage"] = {"input_tokens": i, "output_tokens": o, "total_tokens": i + o,
                             "input_tokens_details": {"cached_tokens": 0},
                             "output_tokens_details": {"reasoning_tokens": 0}}
    if not stream:
        return {"type": "json", "status": 200, "body": response}
    names: list[str] = []
    events: list[dict[str, Any]] = []

    def emit(name: str, **payload: Any) -> None:
        names.append(name)
        events.append({"type": name, "sequence_number": len(events), **payload})

    emit("response.created", response={**response, "status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(items):
        emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress"})
        if item["type"] == "message":
            emit("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                 delta=turn.text)
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return {"type": "sse", "status": 200, "events": [json.dumps(e) for e in events], "eventNames": names}


def send_exchange(response: Response, exchange: dict[str, Any]) -> None:
    """Write an exchange on the wire (SSE chunk by chunk, each event one write)."""
    if exchange["type"] == "json":
        response.send_json(exchange.get("status", 200), exchange["body"])
        return
    response.start(exchange.get("status", 200), {"Content-Type": "text/event-stream"}, chunked=True)
    names = exchange.get("eventNames") or [""] * len(exchange["events"])
    for name, data in zip(names, exchange["events"]):
        response.write(((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode())
    response.end()


@dataclass
class ScriptedStub:
    """A handler answering the scripted turns in order (thread-safe)."""

    turns: list[Turn]
    model: str = "stub-model"
    calls: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request, response: Response) -> None:
        body = request.json()
        with self.lock:
            n = self.calls
            self.calls += 1
            self.bodies.append(body)
        turn = self.turns[min(n, len(self.turns) - 1)]
        stream = body.get("stream") is True
        if request.path.endswith("/responses"):
            exchange = responses_exchange(turn, n, self.model, stream)
        else:
            exchange = chat_exchange(turn, n, self.model, stream)
        send_exchange(response, exchange)
