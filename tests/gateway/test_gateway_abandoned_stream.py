"""A call the agent abandons before the provider's usage arrives counts as a call without usage.

The provider reports usage in a stream's last events (chat's usage chunk,
Responses' ``response.completed``); an agent that hangs up mid-stream, or a
run that ends with a call in flight, leaves that call's usage unseen. It must
count in ``calls_without_usage`` and raise ``usage_unreported`` (the token
total is not complete), and a recording of it must replay to the same counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from lab.execute.gateway_verdict import gateway_incidents
from lab.gateway import Gateway, LiveUpstream, RecordedCall, RecordingUpstream, ReplayUpstream
from lab.replay.matching import Matcher, Recording
from lab.replay.normalise import RequestNormaliser
from tests.helpers.gateway_support import AUTH, REAL_KEY, Halts
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.openai_stub import SlowStub

MakeGateway = Callable[..., Gateway]
NORMALISE = RequestNormaliser()
ENDPOINTS = {"chat": "/chat/completions", "responses": "/responses"}


def body(api: str, prompt: str, stream: bool = True) -> dict[str, Any]:
    if api == "responses":
        return {"model": "m", "stream": stream, "input": prompt}
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": prompt}]}


def hang_up_after_first_event(gateway: Gateway, api: str) -> None:
    """An agent that reads one event of a streamed answer and closes the connection."""
    assert gateway.address is not None and gateway.address.base_url is not None
    with httpx.stream("POST", gateway.address.base_url + ENDPOINTS[api], headers=AUTH,
                      json=body(api, "slow")) as response:
        assert response.status_code == 200
        next(line for line in response.iter_lines() if line.startswith("data:"))


def read_all(gateway: Gateway, api: str, prompt: str) -> str:
    assert gateway.address is not None and gateway.address.base_url is not None
    return httpx.post(gateway.address.base_url + ENDPOINTS[api], headers=AUTH, json=body(api, prompt),
                      timeout=10).text


def assert_one_abandoned_of_two(gateway: Gateway, halts: Halts) -> None:
    stats = gateway.stats
    assert (stats.calls, stats.calls_with_usage, stats.calls_without_usage) == (2, 1, 1)
    assert stats.abandoned_calls == 1 and stats.upstream_errors == 0 and not halts.calls
    assert stats.usage is None, "a call's usage was never seen: the total is not complete"
    assert stats.to_json()["callsWithoutUsage"] == 1 and stats.to_json()["usage"] is None
    [incident] = [i for i in gateway_incidents(stats) if i["kind"] == "usage_unreported"]
    assert incident["detail"].startswith("1 of 2 answered call(s) reported no usage")
    assert "1 abandoned before the provider reported it" in incident["detail"]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_stream_the_agent_hangs_up_on_counts_as_a_call_without_usage(
        make_gateway: MakeGateway, provider: LocalHTTPServer, release: threading.Event, halts: Halts,
        api: str) -> None:
    provider.handler = slow = SlowStub(release)
    gateway = make_gateway()

    hang_up_after_first_event(gateway, api)
    assert slow.hung_up.wait(10), "the gateway stops reading a stream the agent left"
    read_all(gateway, api, "fast")

    assert_one_abandoned_of_two(gateway, halts)
    assert not gateway.internal_errors


@pytest.mark.parametrize("stream", [True, False])
def test_a_call_in_flight_when_the_gateway_stops_counts_as_a_call_without_usage(
        make_gateway: MakeGateway, provider: LocalHTTPServer, release: threading.Event, halts: Halts,
        stream: bool) -> None:
    # The provider goes silent mid-stream (or never answers): the gateway is waiting on it, not writing,
    # so it learns that the run ended only when it stops; the call's usage was never seen.
    provider.handler = slow = SlowStub(release, pause_s=10, repeats=1)
    gateway = make_gateway(shutdown_timeout_s=0.2)
    read_all(gateway, "chat", "fast")
    if stream:
        hang_up_after_first_event(gateway, "chat")
    else:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(gateway.address.base_url + "/chat/completions", headers=AUTH,
                       json=body("chat", "slow", stream=False), timeout=0.5)
    assert slow.arrived.wait(10)

    gateway.stop()

    assert_one_abandoned_of_two(gateway, halts)
    assert not gateway.internal_errors


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_recording_of_an_abandoned_stream_replays_to_the_same_counts(
        make_gateway: MakeGateway, provider: LocalHTTPServer, release: threading.Event, halts: Halts,
        api: str) -> None:
    provider.handler = slow = SlowStub(release)
    recorded: list[RecordedCall] = []
    recording = make_gateway(RecordingUpstream(LiveUpstream(provider.url + "/v1", REAL_KEY, timeout_s=10),
                                               NORMALISE, recorded.append))
    hang_up_after_first_event(recording, api)
    assert slow.hung_up.wait(10)
    live_text = read_all(recording, api, "fast")
    recording.stop()
    assert_one_abandoned_of_two(recording, halts)
    abandoned = next(c.exchange for c in recorded if c.exchange.get("abandoned"))
    assert abandoned["complete"] is False and len(abandoned["events"]) >= 2

    provider.reset()  # replay never reaches it
    matcher = Matcher([Recording(c.index, c.api, c.request, c.exchange) for c in recorded], source="test")
    replay = make_gateway(ReplayUpstream(matcher, NORMALISE))
    # The worst case for replay: this agent reads on, so the gateway meets the end of the recording.
    cut_text = read_all(replay, api, "slow")
    assert read_all(replay, api, "fast") == live_text

    assert_one_abandoned_of_two(replay, halts)
    assert "error" not in cut_text, "the recording's end is where the agent left, not a provider fault"
    assert matcher.unused == [] and provider.requests == []
