"""OpenAICompatProvider error classification and retries against a real local server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from lab.errors import (
    ConfigError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimited,
    ProviderResponseInvalid,
    ProviderTimeout,
)
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.wire import parse_exchange
from tests.helpers.http_server import LocalHTTPServer, Request, Response, closed_port_url

FIXTURES = Path(__file__).parent / "fixtures"
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [], "max_tokens": 64}
TEXT_JSON = (FIXTURES / "text.json").read_bytes()
TEXT_SSE = (FIXTURES / "text_usage.sse").read_bytes()
Make = Callable[..., OpenAICompatProvider]


def answers(*steps: Callable[[Response], None]) -> Callable[[Request, Response], None]:
    """A handler playing ``steps`` in order, one per request (the last one repeats)."""
    count = iter(range(10_000))

    def handler(request: Request, response: Response) -> None:
        steps[min(next(count), len(steps) - 1)](response)
    return handler


def status(code: int, headers: dict[str, str] | None = None,
           body: bytes = b'{"error":{"message":"try later"}}') -> Callable[[Response], None]:
    return lambda response: response.send(code, body, headers=headers)


def ok_json(response: Response) -> None:
    response.send(200, TEXT_JSON)


def test_429_then_200_retries_and_records(server: LocalHTTPServer, make_openai: Make,
                                          sleeps: list[float]) -> None:
    server.handler = answers(status(429, {"Retry-After": "2"}), ok_json)
    provider = make_openai(stream=False)
    exchange = provider.send(dict(REQUEST))
    assert parse_exchange(exchange).content == "Hello, wörld ✓"
    assert len(server.requests) == 2
    assert sleeps == [2.0]
    assert provider.last_retries == [{"attempt": 1, "status": 429, "cause": "rate_limited",
                                      "reason": "HTTP 429: try later", "delay_s": 2.0}]
    assert "retries" not in exchange  # the exchange stays what the server sent


def test_retry_after_is_capped(server: LocalHTTPServer, make_openai: Make, sleeps: list[float]) -> None:
    server.handler = answers(status(429, {"Retry-After": "3600"}), ok_json)
    make_openai(stream=False, timeout_s=1000.0).send(dict(REQUEST))
    assert sleeps == [30.0]


def test_retry_after_ms_is_honoured(server: LocalHTTPServer, make_openai: Make, sleeps: list[float]) -> None:
    server.handler = answers(status(503, {"retry-after-ms": "250"}), ok_json)
    make_openai(stream=False).send(dict(REQUEST))
    assert sleeps == [0.25]


def test_500_three_times_fails_after_bounded_retries(server: LocalHTTPServer, make_openai: Make,
                                                     sleeps: list[float]) -> None:
    server.handler = answers(status(500, body=b'{"error":{"message":"boom"}}'))
    provider = make_openai(stream=True, max_retries=2)
    with pytest.raises(ProviderError) as caught:
        provider.send(dict(REQUEST))
    assert type(caught.value) is ProviderError
    assert caught.value.cause == "server"
    assert "HTTP 500 after 3 attempts: boom" in str(caught.value)
    assert len(server.requests) == 3
    assert sleeps == [0.5, 1.0]  # exponential backoff
    assert [r["status"] for r in provider.last_retries] == [500, 500]


def test_429_forever_is_rate_limited(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = answers(status(429))
    with pytest.raises(ProviderRateLimited, match="HTTP 429 after 2 attempts"):
        make_openai(max_retries=1).send(dict(REQUEST))
    assert len(server.requests) == 2


def test_no_retry_whose_wait_passes_the_deadline(server: LocalHTTPServer, make_openai: Make,
                                                 sleeps: list[float]) -> None:
    server.handler = answers(status(429, {"Retry-After": "20"}), ok_json)
    with pytest.raises(ProviderRateLimited, match="after 1 attempt:"):
        make_openai(timeout_s=30.0).send(dict(REQUEST), timeout_s=5.0)
    assert sleeps == []


@pytest.mark.parametrize("code", [401, 403])
def test_auth_failure_is_not_retried(code: int, server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = answers(status(code, body=b'{"error":{"message":"Incorrect API key provided"}}'))
    with pytest.raises(ProviderAuthError, match=f"HTTP {code}: Incorrect API key provided.*TEST_API_KEY"):
        make_openai().send(dict(REQUEST))
    assert len(server.requests) == 1


def test_key_echoed_by_the_server_is_redacted(server: LocalHTTPServer, make_openai: Make, api_key: str) -> None:
    server.handler = answers(status(401, body=f'{{"error":{{"message":"bad key {api_key}"}}}}'.encode()))
    with pytest.raises(ProviderAuthError) as caught:
        make_openai().send(dict(REQUEST))
    assert api_key not in str(caught.value)
    assert "<redacted>" in str(caught.value)


def test_other_4xx_is_a_bad_request(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = answers(status(400, body=b'{"error":{"message":"context too long"}}'))
    with pytest.raises(ProviderError, match="HTTP 400: context too long") as caught:
        make_openai().send(dict(REQUEST))
    assert caught.value.cause == "bad_request"
    assert len(server.requests) == 1


@pytest.mark.parametrize("value", [None, "", "  "])
def test_missing_key_names_the_variable(value: str | None, server: LocalHTTPServer, make_openai: Make) -> None:
    env = {} if value is None else {"TEST_API_KEY": value}
    with pytest.raises(ProviderAuthError, match="environment variable TEST_API_KEY is not set"):
        make_openai(env=env).send(dict(REQUEST))
    assert server.requests == []


def test_connection_refused(make_openai: Make) -> None:
    with pytest.raises(ProviderError) as caught:
        make_openai(base_url=closed_port_url() + "/v1").send(dict(REQUEST))
    assert caught.value.cause == "connect"
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_connection_reset_before_answering(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = lambda request, response: response.reset()
    with pytest.raises(ProviderError) as caught:
        make_openai().send(dict(REQUEST))
    assert caught.value.cause == "connect"
    assert isinstance(caught.value.__cause__, httpx.TransportError)


def test_server_closes_mid_stream(server: LocalHTTPServer, make_openai: Make) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        response.write(TEXT_SSE[: len(TEXT_SSE) // 2])
        response.close()  # no terminating chunk: the body is incomplete

    server.handler = handler
    with pytest.raises(ProviderError, match="connection lost") as caught:
        make_openai().send(dict(REQUEST))
    assert caught.value.cause == "connect"
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


@pytest.mark.parametrize("tail", [b"", b'data: {"id":"chatcmpl-BAx1","object":"chat.comp'])
def test_stream_ending_early_is_incomplete_not_an_error(tail: bytes, server: LocalHTTPServer,
                                                        make_openai: Make) -> None:
    events = TEXT_SSE.split(b"\n\n")
    # role and two content deltas, then (maybe) half an event; no finish, no [DONE]
    body = b"\n\n".join(events[:3]) + b"\n\n" + tail

    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"})
        response.write(body)

    server.handler = handler
    completion = parse_exchange(make_openai().send(dict(REQUEST)))
    assert (completion.content, completion.complete, completion.finish_reason) == ("Hello, wörld ✓", False, None)


@pytest.mark.parametrize("stream", [True, False])
def test_server_that_never_answers_times_out(stream: bool, server: LocalHTTPServer, release: threading.Event,
                                             make_openai: Make) -> None:
    server.handler = lambda request, response: release.wait()
    with pytest.raises(ProviderTimeout) as caught:
        make_openai(stream=stream, timeout_s=0.5).send(dict(REQUEST))
    assert isinstance(caught.value.__cause__, httpx.TimeoutException)


def test_remaining_wall_budget_caps_the_timeout(server: LocalHTTPServer, release: threading.Event,
                                                make_openai: Make) -> None:
    server.handler = lambda request, response: release.wait()
    with pytest.raises(ProviderTimeout, match="within 0.30 s"):
        make_openai(timeout_s=60.0).send(dict(REQUEST), timeout_s=0.3)


def test_stream_stalling_after_some_events_times_out(server: LocalHTTPServer, release: threading.Event,
                                                     make_openai: Make) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        response.write(TEXT_SSE.split(b"\n\n")[0] + b"\n\n")
        release.wait()

    server.handler = handler
    with pytest.raises(ProviderTimeout):
        make_openai(timeout_s=0.5).send(dict(REQUEST))


def test_stream_past_the_deadline_stops(server: LocalHTTPServer, make_openai: Make) -> None:
    ticks = iter(float(t) for t in range(1000))  # each clock reading advances one second
    server.handler = lambda request, response: response.send(200, TEXT_SSE, content_type="text/event-stream")
    with pytest.raises(ProviderTimeout, match="stream still running at the deadline"):
        make_openai(timeout_s=3.0, clock=lambda: next(ticks)).send(dict(REQUEST))


def test_spent_budget_fails_before_calling(server: LocalHTTPServer, make_openai: Make) -> None:
    with pytest.raises(ProviderTimeout, match="wall budget was spent"):
        make_openai().send(dict(REQUEST), timeout_s=0.0)
    assert server.requests == []


@pytest.mark.parametrize("body, content_type, stream", [
    (b"<html>Bad gateway</html>", "text/html", False),
    (b"<html>Bad gateway</html>", "text/html", True),
    (b"[1, 2]", "application/json", False),
    (b'{"object": "chat.completion"}', "application/json", False),
    (b"data: {not json\n\ndata: [DONE]\n\n", "text/event-stream", True),
])
def test_unparseable_answer_is_invalid(body: bytes, content_type: str, stream: bool,
                                       server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = lambda request, response: response.send(200, body, content_type=content_type)
    with pytest.raises(ProviderResponseInvalid):
        make_openai(stream=stream).send(dict(REQUEST))


@pytest.mark.parametrize("options, field", [
    ({"base_url": "api.openai.com/v1"}, "provider.base_url"),
    ({"timeout_s": 0}, "provider.timeout_s"),
    ({"max_retries": -1}, "provider.max_retries"),
    ({"api_key_env": ""}, "provider.api_key_env"),
    ({"env": {"K": "k", "SSL_CERT_FILE": "/nonexistent/ca.pem"}}, "SSL_CERT_FILE"),
])
def test_bad_settings_are_config_errors(options: dict[str, object], field: str, make_openai: Make) -> None:
    with pytest.raises(ConfigError, match=field):
        make_openai(**options)


def test_proxy_comes_from_the_injected_env(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = lambda request, response: response.send(200, TEXT_JSON)
    env = {"K": "key", "HTTP_PROXY": server.url}
    make_openai(base_url="http://provider.example/v1", api_key_env="K", env=env, stream=False).send(dict(REQUEST))
    assert server.requests[0].path == "http://provider.example/v1/chat/completions"  # absolute form: a proxy


def test_loopback_never_goes_through_a_proxy(server: LocalHTTPServer, make_openai: Make) -> None:
    server.handler = lambda request, response: response.send(200, TEXT_JSON)
    env = {"K": "key", "http_proxy": closed_port_url()}
    make_openai(api_key_env="K", env=env, stream=False).send(dict(REQUEST))
    assert server.requests[0].path == "/v1/chat/completions"


@pytest.mark.parametrize("no_proxy, proxied", [
    ("", True), ("*", False), ("provider.example", False), (".example", False),
    ("other.example, provider.example", False), ("example.org", True), ("der.example", True)])
def test_no_proxy_rules(no_proxy: str, proxied: bool) -> None:
    from lab.providers.client import proxy_for  # a pure helper; the network path is tested above

    env = {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": no_proxy}
    assert (proxy_for(env, "https://provider.example/v1") is not None) is proxied
