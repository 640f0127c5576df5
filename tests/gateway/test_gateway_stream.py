"""Streams pass through event by event as they arrive; usage is counted from what the provider reports."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest

from lab.gateway import Gateway
from tests.helpers.gateway_support import AUTH, Halts, sdk
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]

CHAT_EVENTS = [b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n',
               b'data: {"choices": [{"index": 0, "delta": {"content": "b"}}]}\n\n', b"data: [DONE]\n\n"]
RESPONSES_EVENTS = [b'event: response.created\ndata: {"type": "response.created"}\n\n',
                    b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta"}\n\n',
                    b'event: response.completed\ndata: {"type": "response.completed"}\n\n']


def hold_after_first(events: list[bytes], release: threading.Event, waited: list[bool],
                     first: int) -> Callable[[Request, Response], None]:
    """A handler that sends the events up to the first with output, waits until the test saw it, then the rest."""

    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        for event in events[:first]:
            response.write(event)
        waited.append(release.wait(10))
        for event in events[first:]:
            response.write(event)
        response.end()

    return handler


# The events before the first one with output (Responses: response.created) are held back, so a
# fault among them can still be retried; from the first output on, each event passes as it arrives.
@pytest.mark.parametrize(("endpoint", "events", "first"), [("/chat/completions", CHAT_EVENTS, 1),
                                                           ("/responses", RESPONSES_EVENTS, 2)])
def test_the_first_output_arrives_before_the_provider_sends_more(
        make_gateway: MakeGateway, provider: LocalHTTPServer, release: threading.Event,
        endpoint: str, events: list[bytes], first: int) -> None:
    waited: list[bool] = []
    provider.handler = hold_after_first(events, release, waited, first)
    received = []

    with httpx.stream("POST", make_gateway().address.base_url + endpoint, headers=AUTH,
                      json={"model": "m", "stream": True}) as response:
        for line in response.iter_lines():
            received.append(line)
            if sum(r.startswith("data:") for r in received) == first:
                release.set()

    assert waited == [True], "the gateway held the first event back until the provider sent more"
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "\n".join(received) + "\n" == b"".join(events).decode()


def test_responses_events_keep_their_names_through_the_sdk(make_gateway: MakeGateway,
                                                          provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="streamed")])
    with sdk(make_gateway().address.base_url) as client:
        events = list(client.responses.create(model="m", input="hi", stream=True))

    assert [e.type for e in events] == ["response.created", "response.output_item.added",
                                        "response.output_text.delta", "response.output_item.done",
                                        "response.completed"]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [True, False])
def test_reported_usage_is_counted(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                   api: str, stream: bool) -> None:
    provider.handler = ScriptedStub([Turn(text="one", usage=(11, 3)), Turn(text="two", usage=(20, 7))])
    gateway = make_gateway()
    with sdk(gateway.address.base_url) as client:
        for _ in range(2):
            if api == "chat":
                result = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "x"}], stream=stream)
            else:
                result = client.responses.create(model="m", input="x", stream=stream)
            if stream:
                list(result)

    stats = gateway.stats
    assert (stats.calls, stats.input_tokens, stats.output_tokens) == (2, 31, 10)
    assert stats.usage is not None and stats.usage.input_tokens == 31


def test_a_call_without_usage_makes_the_total_unknown(make_gateway: MakeGateway,
                                                      provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="one"), Turn(text="two", usage=None)])
    gateway = make_gateway()
    for _ in range(2):
        httpx.post(gateway.address.base_url + "/chat/completions", json={"model": "m"}, headers=AUTH)

    stats = gateway.stats

    assert (stats.calls_with_usage, stats.calls_without_usage) == (1, 1)
    assert stats.usage is None


def test_a_stream_the_provider_breaks_after_output_ends_with_an_error_event(
        make_gateway: MakeGateway, provider: LocalHTTPServer, halts: Halts) -> None:
    import openai  # a second of import: only the tests that name its errors pay for it

    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        response.write(CHAT_EVENTS[0])
        response.close()

    provider.handler = handler
    gateway = make_gateway()

    with sdk(gateway.address.base_url) as client, pytest.raises(openai.APIError) as raised:
        for _ in client.chat.completions.create(model="m", messages=[], stream=True):
            pass

    # The output already reached the agent: not retried; the agent gets a well-formed error.
    assert len(provider.requests) == 1
    assert "stream broke off" in str(raised.value)
    assert gateway.stats.upstream_errors == 1 and gateway.stats.faults[0]["cause"] == "connect"
    assert [h.reason for h in halts.calls] == ["upstream_fault"]
