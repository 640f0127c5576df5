"""Record hooks see each complete exchange; replay serves it without the network, by content."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest

from lab.gateway import Gateway, LiveUpstream, RecordedCall, RecordingUpstream, ReplayUpstream
from lab.replay.matching import Matcher, Recording, ReplayDivergence
from lab.replay.normalise import RequestNormaliser
from tests.helpers.gateway_support import AUTH, REAL_KEY, Halts
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]
NORMALISE = RequestNormaliser()


def chat_body(note: str, *, stream: bool, **extra: Any) -> dict[str, Any]:
    """A chat request whose session id, timestamp and request id are fresh on every call."""
    now = datetime.now(timezone.utc).isoformat()
    return {"model": "m", "stream": stream, "user": f"session-{uuid.uuid4()}", **extra,
            "messages": [{"role": "system", "content": "be brief"},
                         {"role": "user", "content": f"task {note} at {now} (request {uuid.uuid4()})"}]}


def responses_body(stream: bool) -> dict[str, Any]:
    return {"model": "m", "stream": stream, "prompt_cache_key": str(uuid.uuid4()),
            "input": [{"type": "message", "id": f"msg_{uuid.uuid4().hex}", "role": "user",
                       "content": [{"type": "input_text", "text": f"request {uuid.uuid4()}"}]}]}


def call(gateway: Gateway, endpoint: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(gateway.address.base_url + endpoint, json=body, headers=AUTH)


def record(make_gateway: MakeGateway, provider: LocalHTTPServer) -> tuple[list[RecordedCall], list[str]]:
    """Four calls (chat and responses, streamed and not) through a recording gateway."""
    provider.handler = ScriptedStub([Turn(text="first"), Turn(text="second"), Turn(text="third"),
                                     Turn(text="fourth")])
    recorded: list[RecordedCall] = []
    live = LiveUpstream(provider.url + "/v1", REAL_KEY)
    gateway = make_gateway(RecordingUpstream(live, NORMALISE, recorded.append))
    texts = [call(gateway, "/chat/completions", chat_body("a", stream=True)).text,
             call(gateway, "/chat/completions", chat_body("b", stream=False)).text,
             call(gateway, "/responses", responses_body(True)).text,
             call(gateway, "/responses", responses_body(False)).text]
    return recorded, texts


def replay_gateway(make_gateway: MakeGateway, recorded: list[RecordedCall]) -> tuple[Gateway, Matcher]:
    matcher = Matcher([Recording(c.index, c.api, c.request, c.exchange) for c in recorded], source="test")
    return make_gateway(ReplayUpstream(matcher, NORMALISE)), matcher


def test_the_observer_gets_each_normalised_request_and_raw_exchange(make_gateway: MakeGateway,
                                                                    provider: LocalHTTPServer) -> None:
    recorded, _ = record(make_gateway, provider)

    assert [(c.index, c.api, c.exchange["type"]) for c in recorded] == [
        (0, "chat", "sse"), (1, "chat", "json"), (2, "responses", "sse"), (3, "responses", "json")]
    assert "user" not in recorded[0].request
    assert recorded[0].request["messages"][1]["content"] == "task a at <datetime> (request <uuid>)"
    assert recorded[0].exchange["events"][-1] == "[DONE]"
    assert recorded[2].exchange["eventNames"][-1] == "response.completed"
    assert "id" not in recorded[2].request["input"][0]
    assert recorded[3].exchange["status"] == 200 and recorded[3].exchange["body"]["id"] == "resp_scripted3"


def test_replay_serves_the_recording_byte_for_byte_without_the_network(make_gateway: MakeGateway,
                                                                       provider: LocalHTTPServer) -> None:
    recorded, live_texts = record(make_gateway, provider)
    provider.reset()  # no handler: a request reaching it would be answered 500 and recorded
    gateway, matcher = replay_gateway(make_gateway, recorded)

    texts = [call(gateway, "/chat/completions", chat_body("a", stream=True)).text,
             call(gateway, "/chat/completions", chat_body("b", stream=False)).text,
             call(gateway, "/responses", responses_body(True)).text,
             call(gateway, "/responses", responses_body(False)).text]

    assert texts == live_texts
    assert provider.requests == []
    assert matcher.unused == []
    assert gateway.stats.calls == 4 and gateway.stats.input_tokens == 40


def test_replay_matches_by_content_not_by_order(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    recorded, live_texts = record(make_gateway, provider)
    gateway, _ = replay_gateway(make_gateway, recorded)

    later = call(gateway, "/responses", responses_body(False)).text
    earlier = call(gateway, "/chat/completions", chat_body("b", stream=False)).text

    assert (later, earlier) == (live_texts[3], live_texts[1])


def test_a_changed_field_diverges_naming_it_and_halts(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                      halts: Halts) -> None:
    recorded, _ = record(make_gateway, provider)
    gateway, _ = replay_gateway(make_gateway, recorded)

    response = call(gateway, "/chat/completions", chat_body("b", stream=False, temperature=0.5))
    after = call(gateway, "/chat/completions", chat_body("a", stream=True))

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "replay_divergence"
    assert "at temperature: recorded None, actual '0.5'" in response.json()["error"]["message"]
    assert [h.reason for h in halts.calls] == ["replay_divergence"]
    divergence = halts.calls[0].divergence
    assert isinstance(divergence, ReplayDivergence)
    assert (divergence.field, divergence.recording_index, divergence.call_index) == ("temperature", 1, 0)
    assert after.status_code == 400, "after a divergence every call is refused"


def test_a_changed_message_diverges_with_its_path_and_excerpts(make_gateway: MakeGateway,
                                                               provider: LocalHTTPServer,
                                                               halts: Halts) -> None:
    recorded, _ = record(make_gateway, provider)
    gateway, _ = replay_gateway(make_gateway, recorded)

    call(gateway, "/chat/completions", chat_body("c", stream=True))

    divergence = halts.calls[0].divergence
    assert divergence is not None
    assert divergence.field == "messages[1].content"
    assert (divergence.recorded, divergence.actual) == ("task a at <datetime> (request <uuid>)",
                                                        "task c at <datetime> (request <uuid>)")


def test_unused_recordings_are_a_divergence_at_the_end(make_gateway: MakeGateway,
                                                       provider: LocalHTTPServer) -> None:
    recorded, _ = record(make_gateway, provider)
    gateway, matcher = replay_gateway(make_gateway, recorded)
    call(gateway, "/chat/completions", chat_body("a", stream=True))

    with pytest.raises(ReplayDivergence, match=r"recorded call 1 was never made \(3 of 4"):
        matcher.finish()
