"""Streams pass through event by event as they arrive; usage is counted from what the provider reports."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest

from lab.gateway import Gateway
from tests.helpers.gateway_support import AUTH, sdk
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]

CHAT_EVENTS = [b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n',
               b'data: {"choices": [{"index": 0, "delta": {"content": "b"}}]}\n\n', b"data: [DONE]\n\n"]
RESPONSES_EVENTS = [b'event: response.created\ndata: {"type": "response.created"}\n\n',
                    b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta"}\n\n',
                    b'event: response.completed\ndata: {"type": "response.completed"}\n\n']


def hold_after_first(events: list[bytes], release: threading.Event,
                     waited: list[bool]) -> Callable[[Request, Response], None]:
    """A handler that sends the first event, then waits until the test saw it, then the rest."""

    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        response.write(events[0])
        waited.append(release.wait(10))
        for event in events[1:]:
            response.write(event)
        response.end()

    return handler


@pytest.mark.parametrize(("endpoint", "events"), [("/chat/completions", CHAT_EVENTS),
                                                  ("/responses", RESPONSES_EVENTS)])
def test_the_first_event_arrives_before_the_provider_sends_the_second(
        make_gateway: MakeGateway, provider: LocalHTTPServer, release: threading.Event,
        endpoint: str, events: list[bytes]) -> None:
    waited: list[bool] = []
    provider.handler = hold_after_first(events, release, waited)
    received = []

    with httpx.stream("POST", make_gateway().address.base_url + endpoint, headers=AUTH,
                      json={"model": "m", "stream": True}) as response:
        for line in response.iter_lines():
            received.append(line)
            if line.startswith("data:"):
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


def test_a_stream_the_provider_breaks_does_not_end_cleanly(make_gateway: MakeGateway,
                                                           provider: LocalHTTPServer) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        response.write(CHAT_EVENTS[0])
        response.close()

    provider.handler = handler
    gateway = make_gateway()

    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream("POST", gateway.address.base_url + "/chat/completions", headers=AUTH,
                          json={"model": "m", "stream": True}) as response:
            for _ in response.iter_lines():
                pass

    assert gateway.stats.upstream_errors == 1
