"""The real key is added on the way out only: nothing the agent side receives holds it."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from lab.gateway import Gateway, LiveUpstream, RecordedCall, RecordingUpstream
from lab.replay.normalise import RequestNormaliser
from tests.helpers.gateway_support import AUTH, REAL_KEY, TOKEN
from tests.helpers.http_server import LocalHTTPServer, Request, Response

MakeGateway = Callable[..., Gateway]


def echo_credentials(request: Request, response: Response) -> None:
    """A careless provider: echoes the Authorization header in a header, the body and every event."""
    seen = request.headers.get("authorization", "")
    if request.json().get("stream"):
        response.start(200, {"Content-Type": "text/event-stream", "X-Echo": seen}, chunked=True)
        response.write(f"event: response.created\ndata: {json.dumps({'auth': seen})}\n\n".encode())
        final = {"type": "response.completed", "response": {"id": seen, "status": "completed", "output": []}}
        response.write(f"event: response.completed\ndata: {json.dumps(final)}\n\n".encode())
        response.end()
    else:
        response.send_json(401, {"error": {"message": f"bad key {seen}"}}, headers={"X-Echo": seen})


@pytest.mark.parametrize("stream", [True, False])
def test_the_provider_gets_the_real_key_and_the_agent_never_sees_it(
        make_gateway: MakeGateway, provider: LocalHTTPServer, stream: bool) -> None:
    provider.handler = echo_credentials

    response = httpx.post(make_gateway().address.base_url + "/responses", headers=AUTH,
                          json={"model": "m", "stream": stream})

    assert provider.requests[0].headers["authorization"] == f"Bearer {REAL_KEY}"
    assert TOKEN not in provider.requests[0].headers["authorization"]
    assert REAL_KEY not in response.text
    assert all(REAL_KEY not in value for value in response.headers.values())
    assert "<redacted>" in response.text


def test_the_recording_holds_no_key(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = echo_credentials
    recorded: list[RecordedCall] = []
    live = LiveUpstream(provider.url + "/v1", REAL_KEY)
    gateway = make_gateway(RecordingUpstream(live, RequestNormaliser(), recorded.append))

    for stream in (True, False):
        httpx.post(gateway.address.base_url + "/chat/completions", headers=AUTH,
                   json={"model": "m", "stream": stream})

    assert len(recorded) == 2
    assert REAL_KEY not in repr(recorded)


def test_the_key_is_not_in_the_upstream_repr() -> None:
    assert REAL_KEY not in repr(LiveUpstream("http://127.0.0.1:9/v1", REAL_KEY))


def test_the_agent_cannot_choose_the_model_the_real_key_pays_for(
        make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = lambda request, response: response.send_json(
        200, {"id": "c", "object": "chat.completion", "model": request.json()["model"],
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]})
    live = LiveUpstream(provider.url + "/v1", REAL_KEY, model="measured-model")
    gateway = make_gateway(live)

    for model in ("measured-model", "o1-pro-expensive", "o1-pro-expensive"):
        httpx.post(gateway.address.base_url + "/chat/completions", headers=AUTH,
                   json={"model": model, "max_tokens": 100000})

    assert [r.json()["model"] for r in provider.requests] == ["measured-model"] * 3
    assert [r.json()["max_tokens"] for r in provider.requests] == [100000] * 3  # the rest goes as sent
    assert live.overridden == {"o1-pro-expensive": 2}
