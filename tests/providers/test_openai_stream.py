"""OpenAICompatProvider against a real local server replaying real-shaped SSE and JSON bodies.

Every fixture in ``fixtures/`` is served with LF, CRLF and CR line endings,
whole, one byte per write, and cut at awkward places (inside ``data:``,
between ``\\r`` and ``\\n``) over chunked transfer encoding; the assembled
content, tool calls, finish state and usage must not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from lab.errors import ProviderError
from lab.providers.base import Completion, ToolCall, Usage
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.wire import parse_exchange
from tests.helpers.http_server import LocalHTTPServer, Request, Response

FIXTURES = Path(__file__).parent / "fixtures"
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "fix calc.py"}],
           "tools": [], "max_tokens": 256}

EXPECTED_SSE = {
    "text_usage": Completion(content="Hello, wörld ✓", finish_reason="stop",
                             usage=Usage(19, 4, 0)),
    "tool_split": Completion(
        content=None, finish_reason="tool_calls", usage=Usage(2048, 31, 1024),
        tool_calls=(ToolCall("call_Xk2pQ9", "edit_file",
                             '{"path":"calc.py","old":"range(n)","new":"range(1, n + 1)"}'),)),
    "parallel_tools": Completion(
        content=None, finish_reason="tool_calls", usage=None,
        tool_calls=(ToolCall("call_one", "read_file", '{"path": "a.py"}'),
                    ToolCall("call_two", "list_dir", '{"path": "src"}'))),
    "no_index": Completion(
        content=None, finish_reason="tool_calls", usage=Usage(50, 20, None),
        tool_calls=(ToolCall("call_a", "read_file", '{"path":"a.py"}'),
                    ToolCall("call_b", "list_dir", '{"path":"."}'))),
    "reasoning": Completion(content="Use range(1, n + 1).", finish_reason="stop",
                            usage=Usage(100, 30, 64), reasoning_content="The loop starts at 0."),
    "cache_hit_only": Completion(content="Done.", finish_reason="stop", usage=Usage(80, 3, 48)),
    "truncated": Completion(content="Partial answer", finish_reason=None, complete=False),
    "stop_with_tools": Completion(
        content=None, finish_reason="stop", usage=Usage(312, 25, None),
        tool_calls=(ToolCall("call_q1", "run_command", '{"argv":["python3","test_calc.py"]}'),)),
    "empty_finish_with_tools": Completion(
        content=None, finish_reason="", usage=None,
        tool_calls=(ToolCall("call_e1", "search", '{"pattern": "def total"}'),)),
    "keepalive": Completion(content="ok", finish_reason="stop", usage=Usage(7, 1, None)),
}
EXPECTED_JSON = {
    "text": Completion(content="Hello, wörld ✓", finish_reason="stop", usage=Usage(19, 4, 0)),
    "tools": Completion(
        content=None, finish_reason="tool_calls", usage=Usage(2048, 40, 1536),
        tool_calls=(ToolCall("call_j1", "read_file", '{"path":"a.py"}'),
                    ToolCall("call_j2", "list_dir", '{"path":"src"}'))),
    "no_usage": Completion(content="ok", finish_reason="length", usage=None,
                           reasoning_content="thinking"),
}
ENDINGS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}


def sse_body(name: str, ending: str) -> bytes:
    """The fixture's bytes with every line ending rewritten."""
    return (FIXTURES / f"{name}.sse").read_bytes().replace(b"\n", ENDINGS[ending])


def awkward_cuts(body: bytes) -> list[int]:
    """Offsets inside every ``data`` field name and between every ``\\r`` and ``\\n``."""
    cuts = [i + 2 for i in range(len(body)) if body.startswith(b"data", i)]
    cuts += [i + 1 for i in range(len(body)) if body.startswith(b"\r\n", i)]
    cuts += [i + 1 for i in range(len(body)) if body[i] >= 0xC0]  # inside multi-byte UTF-8
    return cuts


def serve_sse(body: bytes, split: str) -> Callable[[Request, Response], None]:
    def handler(request: Request, response: Response) -> None:
        headers = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        if split == "awkward":
            response.start(200, headers, chunked=True)
            response.write_pieces(body, awkward_cuts(body))
            response.end()
            return
        response.start(200, headers)  # body delimited by closing the connection
        response.write_pieces(body, 1 if split == "bytes" else len(body) or 1)
    return handler


@pytest.mark.parametrize("split", ["whole", "bytes", "awkward"])
@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("name", sorted(EXPECTED_SSE))
def test_stream_fixture_assembles(name: str, ending: str, split: str, server: LocalHTTPServer,
                                  make_openai: Callable[..., OpenAICompatProvider]) -> None:
    server.handler = serve_sse(sse_body(name, ending), split)
    exchange = make_openai(stream=True).send(dict(REQUEST))
    assert exchange["type"] == "sse"
    assert parse_exchange(exchange) == EXPECTED_SSE[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_SSE))
def test_stream_events_are_the_data_fields_in_order(name: str, server: LocalHTTPServer,
                                                    make_openai: Callable[..., OpenAICompatProvider]) -> None:
    body = sse_body(name, "lf")
    server.handler = serve_sse(body, "whole")
    expected = [line[5:].lstrip(" ") for line in body.decode().split("\n")
                if line.startswith("data:") and line[5:].strip()]
    assert make_openai().send(dict(REQUEST))["events"] == expected


class _PieceStream(httpx.SyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_decoder_sees_exact_awkward_boundaries(ending: str, sleeps: list[float]) -> None:
    # TCP may coalesce the server's small writes; an httpx transport hands the
    # client exactly these pieces, so every awkward boundary is really exercised.
    body = sse_body("tool_split", ending)
    cuts = [0, *sorted(set(awkward_cuts(body))), len(body)]
    pieces = [body[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"},
                              stream=_PieceStream(pieces))

    provider = OpenAICompatProvider(
        base_url="http://provider.test/v1", api_key_env="K", stream=True, timeout_s=5,
        max_retries=0, env={"K": "key"}, transport=httpx.MockTransport(answer), sleep=sleeps.append)
    assert parse_exchange(provider.send(dict(REQUEST))) == EXPECTED_SSE["tool_split"]


@pytest.mark.parametrize("name", sorted(EXPECTED_JSON))
def test_json_body_assembles(name: str, server: LocalHTTPServer,
                             make_openai: Callable[..., OpenAICompatProvider]) -> None:
    body = (FIXTURES / f"{name}.json").read_bytes()
    server.handler = lambda request, response: response.send(200, body)
    exchange = make_openai(stream=False).send(dict(REQUEST))
    assert exchange == {"type": "json", "status": 200, "body": json.loads(body)}
    assert parse_exchange(exchange) == EXPECTED_JSON[name]


def test_stream_request_answered_with_json_is_accepted(server: LocalHTTPServer,
                                                       make_openai: Callable[..., OpenAICompatProvider]) -> None:
    body = (FIXTURES / "tools.json").read_bytes()
    server.handler = lambda request, response: response.send(200, body)
    exchange = make_openai(stream=True).send(dict(REQUEST))
    assert parse_exchange(exchange) == EXPECTED_JSON["tools"]


@pytest.mark.parametrize("fixture, stream, cause, requests", [
    ("in_band_error.sse", True, "server", 3),  # overloaded mid-stream: retried like a 502
    ("in_band_error.json", False, "bad_request", 1),  # invalid_request_error: not retried
])
def test_in_band_error_after_200_is_classified_by_its_type(
        fixture: str, stream: bool, cause: str, requests: int, server: LocalHTTPServer,
        make_openai: Callable[..., OpenAICompatProvider]) -> None:
    body = (FIXTURES / fixture).read_bytes()
    content_type = "text/event-stream" if stream else "application/json"
    server.handler = lambda request, response: response.send(200, body, content_type=content_type)
    with pytest.raises(ProviderError) as caught:
        make_openai(stream=stream).send(dict(REQUEST))
    assert caught.value.cause == cause
    assert len(server.requests) == requests
    assert f"error in the {'stream' if stream else 'body'} after HTTP 200" in str(caught.value)
    assert ("upstream model overloaded" if stream else "does not exist") in str(caught.value)


@pytest.mark.parametrize("stream", [True, False])
def test_request_body_headers_and_path(stream: bool, server: LocalHTTPServer, api_key: str,
                                       make_openai: Callable[..., OpenAICompatProvider]) -> None:
    answer = sse_body("text_usage", "lf") if stream else (FIXTURES / "text.json").read_bytes()
    content_type = "text/event-stream" if stream else "application/json"
    server.handler = lambda request, response: response.send(200, answer, content_type=content_type)
    request = dict(REQUEST)
    make_openai(stream=stream).send(request)
    received = server.requests[0]
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.headers["authorization"] == f"Bearer {api_key}"
    extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    assert received.json() == {**REQUEST, **extra}
    assert request == REQUEST  # the caller's dict is not modified
