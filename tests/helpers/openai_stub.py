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

:class:`SlowStub` streams slowly, for agents that hang up mid-stream.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from lab.gateway.exchange import SseEvent, carries_output
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


class SlowStub:
    """A provider that streams slowly when the prompt says ``slow``: an answer's events up to its first
    output, then that output again every ``pause_s`` (at most ``repeats`` times), then the rest — the
    usage and the terminal event. Other requests are answered at once; usage is always 10 in, 5 out.
    A slow request that is not streamed is not answered until ``release`` is set.

    Attributes:
        hung_up: set when the client stopped reading a slow stream (a write to it failed).
        arrived: set when a slow request arrived.
    """

    def __init__(self, release: threading.Event, pause_s: float = 0.02, repeats: int = 250) -> None:
        self.release = release
        self.pause_s = pause_s
        self.repeats = repeats
        self.hung_up = threading.Event()
        self.arrived = threading.Event()

    def __call__(self, request: Request, response: Response) -> None:
        body = request.json()
        api = "responses" if request.path.endswith("/responses") else "chat"
        slow = "slow" in json.dumps(body.get("input") if api == "responses" else body.get("messages"))
        make = responses_exchange if api == "responses" else chat_exchange
        exchange = make(Turn(text="hello", usage=(10, 5)), 0, "m", body.get("stream") is True)
        if exchange["type"] == "json":
            if slow:
                self.arrived.set()
                self.release.wait(10)  # a provider that never answers, until the test ends
            response.send_json(200, exchange["body"])
            return
        names = exchange.get("eventNames") or [""] * len(exchange["events"])
        events = [SseEvent(data, name or None) for data, name in zip(exchange["events"], names)]
        first = next(i for i, event in enumerate(events) if carries_output(api, event))
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        try:
            for event in events[:first + 1]:
                response.write(event.encode())
            if slow:
                self.arrived.set()
                for _ in range(self.repeats):
                    if self.release.wait(self.pause_s):
                        break
                    response.write(events[first].encode())
            for event in events[first + 1:]:
                response.write(event.encode())
            response.end()
        except ConnectionError:
            self.hung_up.set()
