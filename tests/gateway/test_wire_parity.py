"""Parity: every recorded answer sample read by the built-in agent's provider and through the gateway gives
the same usage, cached, partial and fault figures (one wire layer: ``lab.providers.answer``).

Samples: every file in ``tests/providers/fixtures`` (chat completions, streamed ``.sse`` or JSON bodies;
``responses_*`` the Responses API), plus error statuses and a body that is not JSON. The built-in path is
``OpenAICompatProvider.send`` and ``parse_exchange`` against a loopback server (the Responses API, which
the built-in agent does not speak, is read from the sample by ``read_answer`` as a replay would); the
gateway path is a real gateway in front of the same server, with no retries, asked by httpx.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from lab.errors import ProviderError
from lab.gateway import Gateway, LiveUpstream, RetryPolicy
from lab.gateway.exchange import body_exchange
from lab.providers.answer import read_answer
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.wire import parse_exchange
from tests.helpers.gateway_support import AUTH, REAL_KEY
from tests.helpers.http_server import LocalHTTPServer, Request, Response

MakeGateway = Callable[..., Gateway]
# Plain-HTTP clients without a certificate store (loading one costs ~0.2 s of CPU per client).
CLIENT = httpx.Client(verify=False, timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client() -> Iterator[None]:
    """The module's client is closed with its connections once the module's tests are done."""
    yield
    CLIENT.close()
FIXTURES = Path(__file__).resolve().parents[1] / "providers" / "fixtures"


class Sample(NamedTuple):
    name: str
    status: int
    content_type: str
    body: bytes

    @property
    def api(self) -> str:
        return "responses" if self.name.startswith("responses_") else "chat"

    @property
    def stream(self) -> bool:
        return self.content_type == "text/event-stream"


class Figures(NamedTuple):
    input_tokens: int | None
    output_tokens: int | None
    cached: int | None
    partial: str | None  # the text an answer that failed carried before its fault
    fault: str | None


def upstream(server: LocalHTTPServer) -> LiveUpstream:
    return LiveUpstream(server.url + "/v1", REAL_KEY, timeout_s=10, transport=httpx.AsyncHTTPTransport(verify=False))


def samples() -> list[Sample]:
    found = [Sample(p.name, 200, "text/event-stream" if p.suffix == ".sse" else "application/json", p.read_bytes())
             for p in sorted(FIXTURES.iterdir()) if p.suffix in (".sse", ".json")]
    error = json.dumps({"error": {"message": "upstream unavailable", "type": "server_error", "code": None}}).encode()
    return found + [
        Sample("status_503.json", 503, "application/json", error),
        Sample("status_429.json", 429, "application/json",
               json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}).encode()),
        Sample("status_401.json", 401, "application/json", b'{"error": {"message": "bad key"}}'),
        Sample("status_500_text.json", 500, "text/plain", b"Internal Server Error"),
        Sample("html_200.json", 200, "text/html", b"<html><body>Bad gateway</body></html>"),
        Sample("responses_status_503.json", 503, "application/json", error),
    ]


def serve(sample: Sample) -> Callable[[Request, Response], None]:
    def handler(request: Request, response: Response) -> None:
        response.start(sample.status, {"Content-Type": sample.content_type, "Content-Length": str(len(sample.body))})
        response.write(sample.body)
        response.end()
    return handler


def sse_exchange_of(status: int, body: bytes) -> dict[str, Any]:
    """The exchange a recording holds for an SSE body (data fields and their event names)."""
    events, names = [], []
    for block in body.decode().split("\n\n"):
        lines = [line for line in block.splitlines() if line]
        data = [line[6:] if line.startswith("data: ") else line[5:] for line in lines if line.startswith("data:")]
        if data:
            events.append("\n".join(data))
            names.append(next((line[7:] for line in lines if line.startswith("event: ")), ""))
    exchange: dict[str, Any] = {"type": "sse", "status": status, "events": events}
    if any(names):
        exchange["eventNames"] = names
    return exchange


def builtin_figures(sample: Sample, server: LocalHTTPServer) -> Figures:
    if sample.api == "responses":
        exchange = (sse_exchange_of(sample.status, sample.body) if sample.stream else
                    {"type": "json", "status": sample.status, "body": json.loads(sample.body)})
        answer = read_answer("responses", exchange)
        usage = answer.usage
        return Figures(usage and usage.input_tokens, usage and usage.output_tokens, usage and usage.cached_input_tokens,
                       (answer.text or None) if answer.fault else None, answer.fault and answer.fault.cause)
    provider = OpenAICompatProvider(server.url + "/v1", "KEY", sample.stream, 5.0, 0, {"KEY": "sk-parity-0123456789"})
    try:
        done = parse_exchange(provider.send({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
    except ProviderError as exc:
        return Figures(None, None, None, (exc.partial or {}).get("content") or None, exc.cause)
    usage = done.usage
    fault = None if done.complete else "incomplete_response"  # the built-in loop's incomplete_error
    return Figures(usage and usage.input_tokens, usage and usage.output_tokens, usage and usage.cached_input_tokens,
                   (done.content or None) if fault else None, fault)


def gateway_figures(sample: Sample, gateway: Gateway) -> Figures:
    path = "/responses" if sample.api == "responses" else "/chat/completions"
    response = CLIENT.post(gateway.address.base_url + path, headers=AUTH,
                          json={"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": sample.stream})
    stats = gateway.stats
    fault = stats.faults[0]["cause"] if stats.faults else None
    partial = None
    if fault is not None and response.headers.get("content-type", "").startswith("text/event-stream"):
        received = read_answer(sample.api, sse_exchange_of(response.status_code, response.content))  # type: ignore[arg-type]
        partial = received.text or None
    if fault is None:  # a refusal of the request is passed on as it came (the agent's own business)
        passed = read_answer(sample.api, body_exchange(response.status_code, response.content))  # type: ignore[arg-type]
        if passed.fault is not None and passed.fault.cause == "bad_request":
            fault = "bad_request"
    usage = stats.usage
    return Figures(usage and usage.input_tokens, usage and usage.output_tokens, usage and usage.cached_input_tokens,
                   partial, fault)


@pytest.mark.parametrize("sample", samples(), ids=lambda s: s.name)
def test_both_paths_read_the_same_figures(sample: Sample, make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = serve(sample)
    builtin = builtin_figures(sample, provider)
    gateway = make_gateway(upstream(provider), retry=RetryPolicy(max_retries=0))

    through_gateway = gateway_figures(sample, gateway)

    assert through_gateway == builtin


# The figures the issue names, on both paths (the parity above says the two agree; these say what they are).
@pytest.mark.parametrize(("name", "expected"), [
    ("groq_x_groq_usage.sse", Figures(45, 2, None, None, None)),
    ("moonshot_choice_usage.sse", Figures(1336, 31, 1280, None, None)),
    ("usage_later_without_details.sse", Figures(2048, 12, 1536, None, None)),
    ("zero_usage.sse", Figures(None, None, None, None, None)),
    ("zero_usage.json", Figures(None, None, None, None, None)),
    ("responses_zero_usage.json", Figures(None, None, None, None, None)),
    ("in_band_error.sse", Figures(None, None, None, "Let me", "server")),
    ("in_band_error_first.sse", Figures(None, None, None, None, "server")),
    ("responses_failed.sse", Figures(None, None, None, None, "server")),
    ("responses_failed_after_output.sse", Figures(None, None, None, "All tests ", "server")),
    ("responses_error_event.sse", Figures(None, None, None, None, "rate_limited")),
    ("responses_no_terminal.sse", Figures(None, None, None, "All tests pass.", "incomplete_response")),
    ("responses_text.sse", Figures(1200, 40, 1024, None, None)),
    ("status_503.json", Figures(None, None, None, None, "server")),
    ("html_200.json", Figures(None, None, None, None, "invalid_response")),
])
def test_the_figures_of_the_named_shapes(name: str, expected: Figures, provider: LocalHTTPServer) -> None:
    sample = next(s for s in samples() if s.name == name)
    provider.handler = serve(sample)
    assert builtin_figures(sample, provider) == expected


def test_cached_partial_is_the_same_on_both_paths(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    from lab.agents.builtin.budget import UsageTally

    with_cached = next(s for s in samples() if s.name == "usage_later_without_details.sse")
    without = next(s for s in samples() if s.name == "groq_x_groq_usage.sse")
    answers = iter([with_cached, without])
    provider.handler = lambda request, response: serve(next(answers))(request, response)
    tally = UsageTally()
    builtin = OpenAICompatProvider(provider.url + "/v1", "KEY", True, 5.0, 0, {"KEY": "sk-parity-0123456789"})
    for _ in range(2):
        tally.add(parse_exchange(builtin.send({"model": "m", "messages": []})).usage)
    builtin_partial = 0 < tally.cached_reported < tally.calls

    answers = iter([with_cached, without])
    gateway = make_gateway(upstream(provider), retry=RetryPolicy(max_retries=0))
    for _ in range(2):
        httpx.post(gateway.address.base_url + "/chat/completions", headers=AUTH, json={"model": "m", "stream": True})

    assert builtin_partial is True and gateway.stats.cached_partial is True
    assert gateway.stats.usage is not None and gateway.stats.usage.cached_input_tokens is None  # as the built-in block
