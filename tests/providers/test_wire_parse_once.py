"""A streamed answer is assembled once: checked by the provider, read by the agent loop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.providers import wire
from lab.providers.wire import parse_exchange


def _stream(text: str) -> dict[str, Any]:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    return {"type": "sse", "status": 200, "events": [json.dumps(chunk), "[DONE]"]}


def test_the_same_stream_again_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    fed: list[str] = []
    feed = wire._StreamAssembler.feed
    monkeypatch.setattr(wire._StreamAssembler, "feed", lambda self, n, data: (fed.append(data), feed(self, n, data)))
    exchange = _stream("DONE")
    first = parse_exchange(exchange)
    assert parse_exchange(exchange) is first
    assert parse_exchange(json.loads(json.dumps(exchange))) is first  # equal content, another object
    assert len(fed) == 2  # one event and [DONE], fed once


@pytest.mark.parametrize("change", ["event", "status", "errors"])
def test_a_changed_stream_is_parsed_anew(change: str) -> None:
    exchange = _stream("first")
    first = parse_exchange(exchange)
    assert first.content == "first"
    if change == "event":
        exchange["events"][0] = _stream("second")["events"][0]  # the same list, edited in place
        assert parse_exchange(exchange).content == "second"
    elif change == "status":
        exchange["status"] = 201
        assert parse_exchange(exchange) is not first
    else:
        exchange["errors"] = ['{"message": "overloaded"}']
        assert parse_exchange(exchange).stream_error
