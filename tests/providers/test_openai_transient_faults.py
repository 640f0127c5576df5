"""Transient faults retried by kind, deadlines and size caps, against a real local server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.errors import ProviderError, ProviderRateLimited, ProviderTimeout
from lab.providers.faults import ServerError, error_cause, in_band_error, one_line, status_cause
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.transfer import ResponseTooLarge
from lab.providers.wire import parse_exchange
from tests.helpers.http_server import LocalHTTPServer, Request, Response, closed_port_url

FIXTURES = Path(__file__).parent / "fixtures"
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64}
TEXT_JSON = (FIXTURES / "text.json").read_bytes()
TEXT_SSE = (FIXTURES / "text_usage.sse").read_bytes()
PARTIAL = (b'data: {"id":"c0","object":"chat.completion.chunk","choices":[{"index":0,'
           b'"delta":{"role":"assistant","content":"Hel"}}]}\n\n')
Make = Callable[..., OpenAICompatProvider]


def steps(*answers: Callable[[Response], None]) -> Callable[[Request, Response], None]:
    """A handler playing ``answers`` in order, one per request (the last one repeats)."""
    count = iter(range(10_000))

    def handler(request: Request, response: Response) -> None:
        answers[min(next(count), len(answers) - 1)](response)
    return handler


def ok(stream: bool) -> Callable[[Response], None]:
    if stream:
        return lambda response: response.send(200, TEXT_SSE, content_type="text/event-stream")
    return lambda response: response.send(200, TEXT_JSON)


def mid_stream_error(error: dict[str, object]) -> Callable[[Response], None]:
    body = PARTIAL + b"data: " + json.dumps({"error": error}).encode() + b"\n\n"
    return lambda response: response.send(200, body, content_type="text/event-stream")


@pytest.mark.parametrize("error, cause", [
    ({"message": "Overloaded", "type": "overloaded_error"}, "server"),
    ({"message": "upstream failed", "type": "server_error", "code": 502}, "server"),
    ({"message": "slow down", "type": "rate_limit_error"}, "rate_limited"),
    ({"message": "something broke"}, "server"),
])
def test_mid_stream_transient_error_is_retried_then_succeeds(
        error: dict[str, object], cause: str, server: LocalHTTPServer, make_openai: Make,
        sleeps: list[float]) -> None:
    server.handler = steps(mid_stream_error(error), ok(True))
    provider = make_openai(stream=True)
    completion = parse_exchange(provider.send(dict(REQUEST)))
    assert completion.content == "Hello, wörld ✓"
    assert len(server.requests) == 2
    assert sleeps == [0.5]
    [retry] = provider.last_retries
    assert (retry["cause"], retry["status"]) == (cause, 200)
    assert retry["reason"].startswith("error in the stream after HTTP 200: ")


def test_mid_stream_invalid_request_is_not_retried(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = steps(mid_stream_error({"message": "bad tools", "type": "invalid_request_error"}))
    with pytest.raises(ProviderError) as caught:
        make_openai(stream=True).send(dict(REQUEST))
    assert caught.value.cause == "bad_request"
    assert caught.value.server == {"message": "bad tools", "type": "invalid_request_error", "code": None}
    assert len(server.requests) == 1


def test_mid_stream_rate_limit_past_retries_is_rate_limited(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = steps(mid_stream_error({"message": "slow down", "type": "rate_limit_error"}))
    with pytest.raises(ProviderRateLimited, match="error in the stream after HTTP 200 after 3 attempts: slow down"):
        make_openai(stream=True, max_retries=2).send(dict(REQUEST))
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [408, 409])
@pytest.mark.parametrize("stream", [True, False])
def test_408_and_409_are_retried_then_succeed(status: int, stream: bool, server: LocalHTTPServer,
                                              make_openai: Make, sleeps: list[float]) -> None:
    server.handler = steps(lambda response: response.send_json(status, {"error": {"message": "try again"}}),
                           ok(stream))
    provider = make_openai(stream=stream)
    assert parse_exchange(provider.send(dict(REQUEST))).content == "Hello, wörld ✓"
    assert len(server.requests) == 2
    assert [r["status"] for r in provider.last_retries] == [status]


def test_connection_reset_is_retried_then_succeeds(server: LocalHTTPServer, make_openai: Make,
                                                   sleeps: list[float]) -> None:
    server.handler = steps(lambda response: response.reset(), ok(True))
    provider = make_openai(stream=True)
    assert parse_exchange(provider.send(dict(REQUEST))).content == "Hello, wörld ✓"
    assert len(server.requests) == 2
    [retry] = provider.last_retries
    assert (retry["cause"], retry["status"]) == ("connect", None)
    assert retry["reason"].startswith("cannot connect: ")


def test_a_connection_closed_without_an_answer_is_sent_again_once_before_it_counts(
        server: LocalHTTPServer, make_openai: Make, sleeps: list[float]) -> None:
    # What a pooled keep-alive connection the server has just closed looks like to the client.
    server.handler = steps(lambda response: response.close(), ok(True))
    provider = make_openai(stream=True, max_retries=0)
    assert parse_exchange(provider.send(dict(REQUEST))).content == "Hello, wörld ✓"
    assert len(server.requests) == 2 and provider.last_retries == [] and sleeps == []


def test_a_server_that_always_closes_without_an_answer_is_a_fault(
        server: LocalHTTPServer, make_openai: Make, sleeps: list[float]) -> None:
    server.handler = steps(lambda response: response.close())
    with pytest.raises(ProviderError, match="cannot connect after 2 attempts: RemoteProtocolError"):
        make_openai(stream=True, max_retries=1).send(dict(REQUEST))
    assert len(server.requests) == 4, "each attempt is one send and one resend"


def test_connection_refused_is_retried_within_max_retries(make_openai: Make, sleeps: list[float]) -> None:
    provider = make_openai(base_url=closed_port_url() + "/v1", max_retries=2)
    with pytest.raises(ProviderError, match="cannot connect after 3 attempts") as caught:
        provider.send(dict(REQUEST))
    assert caught.value.cause == "connect"
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert sleeps == [0.5, 1.0]


def test_typed_400_keeps_type_code_and_message_on_one_line(server: LocalHTTPServer, make_openai: Make) -> None:
    body = {"error": {"message": "Authentication Error,\nno db\r\n connection", "type": "no_db_connection",
                      "param": None, "code": "400"}}
    server.handler = lambda request, response: response.send_json(400, body)
    with pytest.raises(ProviderError) as caught:
        make_openai(stream=False).send(dict(REQUEST))
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    assert message.endswith("HTTP 400: Authentication Error, no db connection (type no_db_connection, code 400)")
    assert (caught.value.cause, caught.value.status) == ("bad_request", 400)
    assert caught.value.server == {"message": "Authentication Error, no db connection",
                                   "type": "no_db_connection", "code": "400"}


@pytest.mark.parametrize("chunked", [True, False])  # False: the body ends when the connection closes
def test_keep_alive_only_stream_ends_at_the_deadline(chunked: bool, server: LocalHTTPServer,
                                                     release: threading.Event, make_openai: Make) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=chunked)
        while not release.is_set():
            response.write(b": keep-alive\n\n")  # raises once the client has gone
            release.wait(0.02)  # pace the comments faster than any read timeout

    server.handler = handler
    with pytest.raises(ProviderTimeout, match="no complete answer within 0.50 s"):
        make_openai(stream=True, timeout_s=0.5, max_retries=0).send(dict(REQUEST))


def test_trickling_body_ends_at_the_deadline(server: LocalHTTPServer, release: threading.Event,
                                             make_openai: Make) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "application/json"}, chunked=True)
        for byte in TEXT_JSON * 1000:
            if release.is_set():
                return
            response.write(bytes([byte]))
            release.wait(0.02)

    server.handler = handler
    with pytest.raises(ProviderTimeout, match="within 0.50 s"):
        make_openai(stream=False, timeout_s=0.5).send(dict(REQUEST))


@pytest.mark.parametrize("stream", [True, False])
def test_oversized_answer_is_refused_without_keeping_it(stream: bool, server: LocalHTTPServer,
                                                        make_openai: Make) -> None:
    filler = "x" * 200_000
    if stream:
        chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": filler}}]})
        body = f"data: {chunk}\n\n".encode()
        server.handler = lambda request, response: response.send(200, body, content_type="text/event-stream")
    else:
        body = json.dumps({"choices": [{"index": 0, "message": {"content": filler}}]}).encode()
        server.handler = lambda request, response: response.send(200, body)
    with pytest.raises(ResponseTooLarge) as caught:
        make_openai(stream=stream, max_response_bytes=65_536).send(dict(REQUEST))
    assert caught.value.cause == "response_too_large"
    assert "provider.max_response_bytes (65536 bytes" in str(caught.value)
    assert "xxxx" not in str(caught.value)
    assert len(server.requests) == 1  # not retried


# Property tests for the kinds: a fault is classified the same way whatever its shape.

@given(st.integers(min_value=400, max_value=599))
def test_an_error_code_classifies_like_its_status(code: int) -> None:
    assert error_cause(ServerError("m", None, str(code))) == status_cause(code)


RETRIED_WORDS = st.sampled_from(["overloaded_error", "server_error", "api_error", "internal_error",
                                 "service_unavailable", "rate_limit_error", "rate_limit_exceeded"])


@given(RETRIED_WORDS, st.text(max_size=40), st.sampled_from(["json", "sse"]))
def test_a_transient_error_object_is_found_and_retried_in_any_shape(kind: str, message: str, shape: str) -> None:
    error = {"error": {"message": message, "type": kind}}
    exchange = ({"type": "json", "status": 200, "body": error} if shape == "json" else
                {"type": "sse", "status": 200, "events": [PARTIAL[6:-2].decode(), json.dumps(error)]})
    found = in_band_error(exchange)
    assert found is not None and found.type == kind
    assert error_cause(found) in ("server", "rate_limited")


@given(st.text())
def test_one_line_never_keeps_a_line_break(text: str) -> None:
    folded = one_line(text)
    assert not any(c in folded for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
    assert len(folded) <= 301
