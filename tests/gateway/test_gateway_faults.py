"""Upstream faults behind the gateway, by kind: retried as the built-in provider retries them; one that
persists is answered as a well-formed error, counted with its cause, and halts the run (an infrastructure
error, not the agent's failure). Requests the gateway cannot serve are kept by path."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.execute.gateway_verdict import gateway_error
from lab.gateway import Gateway, LiveUpstream, RetryPolicy
from tests.helpers.bombs import gzip_bomb
from tests.helpers.gateway_support import AUTH, REAL_KEY, Halts, sdk
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.openai_stub import ScriptedStub, Turn, chat_exchange, responses_exchange, send_exchange

MakeGateway = Callable[..., Gateway]
GZIP_BOMB = gzip_bomb(8)
FIXTURES = Path(__file__).resolve().parents[1] / "providers" / "fixtures"
CLIENT = httpx.Client(verify=False, timeout=10)  # no certificate store: plain HTTP to loopback


@pytest.fixture(scope="module", autouse=True)
def _close_client() -> Iterator[None]:
    """The module's client is closed with its connections once the module's tests are done."""
    yield
    CLIENT.close()


def upstream(server: LocalHTTPServer, **options: object) -> LiveUpstream:
    return LiveUpstream(server.url + "/v1", REAL_KEY, timeout_s=10,
                        transport=httpx.AsyncHTTPTransport(verify=False), **options)  # type: ignore[arg-type]


def raw(path: str, content_type: str = "text/event-stream", status: int = 200) -> Callable[[Response], None]:
    body = (FIXTURES / path).read_bytes()
    return lambda response: (response.start(status, {"Content-Type": content_type, "Content-Length": str(len(body))}),
                             response.write(body), response.end())  # type: ignore[func-returns-value]


# A fault kind: the answer that carries it, the API it belongs to, and the cause the lab gives it.
FAULTS: dict[str, tuple[Callable[[Response], None], str, str]] = {
    "http_503": (lambda r: r.send_json(503, {"error": {"message": "unavailable"}}, headers={"retry-after-ms": "0"}),
                 "chat", "server"),
    "http_429": (lambda r: r.send_json(429, {"error": {"message": "slow down", "type": "rate_limit_error"}},
                                       headers={"retry-after": "0"}), "chat", "rate_limited"),
    "in_band_json": (lambda r: r.send_json(200, {"error": {"message": "Overloaded", "type": "overloaded_error"}}),
                     "chat", "server"),
    "in_band_first_event": (raw("in_band_error_first.sse"), "chat", "server"),
    "connection_closed": (lambda r: r.close(), "chat", "connect"),
    "response_failed": (raw("responses_failed.sse"), "responses", "server"),
    "responses_error_event": (raw("responses_error_event.sse"), "responses", "rate_limited"),
}


def good(api: str, stream: bool) -> Callable[[Response], None]:
    turn = Turn(text="recovered", usage=(7, 3))
    exchange = responses_exchange(turn, 0, "m", stream) if api == "responses" else chat_exchange(turn, 0, "m", stream)
    return lambda response: send_exchange(response, exchange)


def call(gateway: Gateway, api: str, stream: bool) -> httpx.Response:
    path = "/responses" if api == "responses" else "/chat/completions"
    return CLIENT.post(gateway.address.base_url + path, headers=AUTH,
                       json={"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": stream})


@settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(FAULTS)), faulty=st.integers(0, 3), stream=st.booleans())
def test_a_fault_is_retried_and_one_that_persists_is_an_error(kind: str, faulty: int, stream: bool,
                                                             provider_server: LocalHTTPServer) -> None:
    answer, api, cause = FAULTS[kind]
    provider_server.reset()
    seen: list[int] = []

    def handler(request: Request, response: Response) -> None:
        seen.append(1)
        # connection_closed: LiveUpstream resends a request the server closed at once, so it fails twice
        per_attempt = 2 if kind == "connection_closed" else 1
        (answer if len(seen) <= faulty * per_attempt else good(api, stream))(response)

    provider_server.handler = handler
    halts = Halts()
    # No waits between attempts here (the backoff is lab.providers.faults.backoff_s, tested with the provider).
    gateway = Gateway(upstream(provider_server), "run-token-0123456789", None, halts,
                      retry=RetryPolicy(max_retries=2, wait=False))
    gateway.start()
    try:
        response = call(gateway, api, stream)
    finally:
        gateway.stop()
    stats = gateway.stats
    if faulty <= 2:  # within the retries: the agent sees only the answer
        assert response.status_code == 200, response.text
        assert (stats.retries, stats.faults, halts.calls) == (faulty, (), [])
        assert stats.usage is not None and (stats.usage.input_tokens, stats.usage.output_tokens) == (7, 3)
    else:
        body = response.json()
        assert response.status_code >= 500 or response.status_code == 429
        assert body["error"]["code"] == cause and body["error"]["type"] == "upstream_error"
        assert "after 3 attempts" in body["error"]["message"]
        assert [(f["cause"], f["attempts"]) for f in stats.faults] == [(cause, 3)]
        assert [h.reason for h in halts.calls] == ["upstream_fault"]
        error = gateway_error(stats, gateway.halt, "probe")
        assert error is not None and (error["kind"], error["cause"]) == ("provider", cause)
    provider_server.reset()


@pytest.mark.parametrize(("answer", "api", "cause"), [
    (raw("responses_no_terminal.sse"), "responses", "incomplete_response"),
    (raw("truncated.sse"), "chat", "incomplete_response"),
    (lambda r: (r.start(200, {"Content-Type": "text/html", "Content-Length": "6"}), r.write(b"<html>"), r.end()),
     "chat", "invalid_response"),
    # a gzip bomb (8 KiB inflating to 8 MiB, past the 4 MiB default cap) and a coding nobody asked for
    (lambda r: r.send(200, GZIP_BOMB, headers={"Content-Encoding": "gzip"}), "chat", "response_too_large"),
    (lambda r: r.send(200, b"\x1b\x00", headers={"Content-Encoding": "br"}), "chat", "invalid_response"),
])
def test_a_fault_that_is_not_transient_is_not_retried(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                      halts: Halts, answer: Callable[[Response], None],
                                                      api: str, cause: str) -> None:
    provider.handler = lambda request, response: answer(response)
    gateway = make_gateway(upstream(provider), retry=RetryPolicy(max_retries=2))

    response = call(gateway, api, stream=True)

    assert len(provider.requests) == 1
    if response.headers["content-type"].startswith("text/event-stream"):  # output had reached the agent
        last = [line for line in response.text.splitlines() if line.startswith("data:")][-1]
        assert (response.status_code, json.loads(last[5:])["code" if api == "responses" else "error"]) == (
            200, cause if api == "responses" else json.loads(last[5:])["error"])
        assert cause in last
    else:
        assert (response.status_code, response.json()["error"]["code"]) == (502, cause)
    assert [f["cause"] for f in gateway.stats.faults] == [cause]
    assert [h.reason for h in halts.calls] == ["upstream_fault"]


def test_an_oversize_answer_is_refused_without_being_kept(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="x" * 5000)])
    gateway = make_gateway(upstream(provider, max_response_bytes=1000), retry=RetryPolicy(max_retries=2))

    body = call(gateway, "chat", stream=False)
    assert (body.status_code, body.json()["error"]["code"]) == (502, "response_too_large")
    streamed = call(gateway, "chat", stream=True)  # what passed before the cap, then the error event
    assert '"code": "response_too_large"' in streamed.text.splitlines()[-2]

    assert "x" * 1000 not in body.text + streamed.text

    assert [f["cause"] for f in gateway.stats.faults] == ["response_too_large"] * 2


def test_the_agent_sdk_sees_an_error_it_raises(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    import openai  # a second of import: only the tests that name its errors pay for it

    provider.handler = lambda request, response: response.send_json(503, {"error": {"message": "down"}})
    gateway = make_gateway(upstream(provider), retry=RetryPolicy(max_retries=0))

    with sdk(gateway.address.base_url) as client, pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    assert "HTTP 503: down" in str(raised.value)


def test_requests_the_gateway_cannot_serve_are_named(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="never")])
    gateway = make_gateway(upstream(provider))
    root = gateway.address.base_url.removesuffix("/v1")

    statuses = [CLIENT.post(root + path, headers=AUTH, json={"model": "m"}).status_code
                for path in ("/v1/v1/chat/completions", "/chat/completions", "/v1/v1/chat/completions")]

    assert statuses == [404, 404, 404] and not provider.requests
    stats = gateway.stats
    assert stats.unserved == ("POST /v1/v1/chat/completions (404 not_found)", "POST /chat/completions (404 not_found)")
    assert (stats.unserved_count, stats.calls) == (3, 0)
    error = gateway_error(stats, None, "my-agent")
    assert error is not None and error["kind"] == "agent_setup"
    assert "agent my-agent never reached the model" in error["message"]
    assert "POST /v1/v1/chat/completions (404 not_found)" in error["message"]
    assert json.loads(CLIENT.post(root + "/v1/v1/chat/completions", headers=AUTH, json={}).content)["error"][
        "message"].startswith("no route POST /v1/v1/chat/completions (served: POST /v1/chat/completions")


@pytest.mark.parametrize("failures", [1, 2])
def test_a_recorded_fault_replays_as_it_happened(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                 failures: int) -> None:
    """Every attempt is recorded; replay retries the same way (without waiting) and ends the same:
    recovered after the retry, or the same fault with the same cause, message and attempts."""
    from lab.gateway import RecordedCall, RecordingUpstream, ReplayUpstream
    from lab.replay.matching import Matcher, Recording
    from lab.replay.normalise import RequestNormaliser

    answers = iter([FAULTS["http_503"][0]] * failures + [good("chat", True)])
    provider.handler = lambda request, response: next(answers)(response)
    recorded: list[RecordedCall] = []
    live = make_gateway(RecordingUpstream(upstream(provider), RequestNormaliser(), recorded.append),
                        retry=RetryPolicy(max_retries=1))
    first = call(live, "chat", stream=True)
    matcher = Matcher([Recording(c.index, c.api, c.request, c.exchange) for c in recorded], source="test")
    replay = make_gateway(ReplayUpstream(matcher, RequestNormaliser()), retry=RetryPolicy(max_retries=1, wait=False))

    again = call(replay, "chat", stream=True)

    assert len(recorded) == 2 == len(provider.requests)
    assert (again.status_code, again.text) == (first.status_code, first.text)
    assert (replay.stats.retries, replay.stats.faults) == (live.stats.retries, live.stats.faults)
    assert replay.stats.faults == (() if failures == 1 else (
        {"callIndex": 0, "attempts": 2, "cause": "server", "message": "HTTP 503: unavailable", "status": 503,
         "server": {"message": "unavailable", "type": None, "code": None}},))
