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

from lab.gateway.scripted import responses_exchange as _responses_exchange
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
    return completion_to_exchange(_completion(turn, n), stream=stream, response_id=f"chatcmpl-{n}", model=model)


def responses_exchange(turn: Turn, n: int, model: str, stream: bool) -> dict[str, Any]:
    """The Responses-API exchange for ``turn`` as call ``n``: the lab's own translation
    (``lab.gateway.scripted.responses_exchange``), as the scripted upstream serves it."""
    return dict(_responses_exchange(_completion(turn, n), n, model, stream=stream))


def _completion(turn: Turn, n: int) -> Completion:
    usage = Usage(*turn.usage) if turn.usage else None
    calls = tuple(ToolCall(f"call_{n}_{j}", name, json.dumps(args)) for j, (name, args) in enumerate(turn.calls))
    return Completion(turn.text, calls, "tool_calls" if calls else "stop", usage=usage)


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
