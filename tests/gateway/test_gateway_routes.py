"""The gateway's routes: auth on everything, two model endpoints, a local model list, 404 for the rest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

import lab
from lab.gateway import Gateway, GatewayError, LiveUpstream, RetryPolicy
from tests.helpers.gateway_support import AUTH, TOKEN, sdk
from tests.helpers.http_server import LocalHTTPServer, closed_port_url
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]


def test_the_worktree_lab_is_imported() -> None:
    assert Path(lab.__file__).resolve().parent == Path(__file__).resolve().parents[2] / "lab"


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/v1/chat/completions"), ("POST", "/v1/responses"), ("GET", "/v1/models"), ("GET", "/other")])
def test_a_request_without_the_token_is_401(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                            method: str, path: str) -> None:
    base = make_gateway().address.base_url.removesuffix("/v1")

    response = httpx.request(method, base + path, json={"model": "m", "messages": []})

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "unauthorized"
    assert provider.requests == []


def test_a_wrong_token_is_401(make_gateway: MakeGateway) -> None:
    base = make_gateway().address.base_url

    response = httpx.post(base + "/chat/completions", json={}, headers={"Authorization": f"Bearer {TOKEN}x"})

    assert response.status_code == 401


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/chat/completions"), ("POST", "/v1/completions"), ("POST", "/v1/embeddings"),
    ("POST", "/chat/completions"), ("DELETE", "/v1/responses"), ("GET", "/")])
def test_other_routes_are_404_json(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                   method: str, path: str) -> None:
    base = make_gateway().address.base_url.removesuffix("/v1")

    response = httpx.request(method, base + path, headers=AUTH)

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found"
    assert provider.requests == []


def test_a_websocket_upgrade_is_404(make_gateway: MakeGateway) -> None:
    base = make_gateway().address.base_url

    response = httpx.get(base + "/responses", headers={
        **AUTH, "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})

    assert response.status_code == 404


def test_models_are_listed_locally(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    base = make_gateway(models=["gpt-test"]).address.base_url

    with sdk(base) as client:
        models = client.models.list()

    assert [m.id for m in models] == ["gpt-test"]
    assert provider.requests == []


def test_a_body_that_is_not_a_json_object_is_400(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    gateway = make_gateway()

    response = httpx.post(gateway.address.base_url + "/chat/completions", content=b"[1, 2]",
                          headers={**AUTH, "Content-Type": "application/json"})

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request"
    assert gateway.stats.refused == 1 and gateway.stats.calls == 0
    assert provider.requests == []


def test_the_body_reaches_the_provider_verbatim(make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="hi")])
    raw = b'{"model": "m",   "messages": [], "temperature": 1.0}'

    httpx.post(make_gateway().address.base_url + "/chat/completions", content=raw,
               headers={**AUTH, "Content-Type": "application/json", "X-Session-Id": "s-1"})

    assert provider.requests[0].body == raw
    assert provider.requests[0].path == "/v1/chat/completions"
    assert "x-session-id" not in provider.requests[0].headers


def test_an_unreachable_provider_is_502(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(LiveUpstream(closed_port_url() + "/v1", "k", timeout_s=5))

    response = httpx.post(gateway.address.base_url + "/chat/completions", json={"model": "m"}, headers=AUTH)

    assert response.status_code == 502
    assert response.json()["error"]["type"] == "upstream_error"
    assert gateway.stats.upstream_errors == 1


def test_a_connection_closed_without_an_answer_is_sent_again_once(make_gateway: MakeGateway,
                                                                   provider: LocalHTTPServer) -> None:
    # What a pooled keep-alive connection the provider closed while the agent worked looks like.
    answer = {"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                      "finish_reason": "stop"}]}
    answers = iter([lambda resp: resp.close(), lambda resp: resp.send_json(200, answer)])
    provider.handler = lambda req, resp: next(answers)(resp)
    gateway = make_gateway()

    response = httpx.post(gateway.address.base_url + "/chat/completions", json={"model": "m"}, headers=AUTH)

    assert (response.status_code, response.json()["id"]) == (200, "c")
    assert len(provider.requests) == 2 and gateway.stats.upstream_errors == 0


def test_a_provider_that_always_closes_without_an_answer_is_502(make_gateway: MakeGateway,
                                                                provider: LocalHTTPServer) -> None:
    provider.handler = lambda req, resp: resp.close()
    gateway = make_gateway(retry=RetryPolicy(max_retries=0))

    response = httpx.post(gateway.address.base_url + "/chat/completions", json={"model": "m"}, headers=AUTH)

    assert response.status_code == 502
    assert "RemoteProtocolError" in response.json()["error"]["message"]
    assert response.json()["error"]["code"] == "connect"
    assert len(provider.requests) == 2  # one send and one resend, no more (no retries allowed here)


def test_a_provider_refusal_of_the_request_passes_through(make_gateway: MakeGateway,
                                                          provider: LocalHTTPServer) -> None:
    body = {"error": {"message": "context too long", "type": "invalid_request_error",
                      "code": "context_length_exceeded"}}
    provider.handler = lambda req, resp: resp.send_json(400, body)
    gateway = make_gateway()

    response = httpx.post(gateway.address.base_url + "/responses", json={"model": "m"}, headers=AUTH)

    assert response.status_code == 400
    assert response.json() == body  # the agent's own business (it may compact and go on)
    assert (gateway.stats.upstream_errors, gateway.halted.is_set()) == (0, False)


def test_unix_socket_only(tmp_path_factory: pytest.TempPathFactory, make_gateway: MakeGateway,
                          provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="over the socket")])
    socket_path = tmp_path_factory.mktemp("gw") / "gw.sock"
    gateway = make_gateway(tcp=False, socket_path=socket_path)

    with httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path))) as client:
        response = client.post("http://gateway/v1/chat/completions", json={"model": "m"}, headers=AUTH)

    assert gateway.address == (None, socket_path)
    assert response.json()["choices"][0]["message"]["content"] == "over the socket"


def test_stop_removes_the_socket_and_is_idempotent(tmp_path_factory: pytest.TempPathFactory) -> None:
    socket_path = tmp_path_factory.mktemp("gw") / "gw.sock"
    gateway = Gateway(LiveUpstream("http://127.0.0.1:9/v1", "k"), TOKEN, socket_path=socket_path)
    gateway.start()

    gateway.stop()
    gateway.stop()

    assert not socket_path.exists()


def test_a_socket_path_too_long_is_a_gateway_error(tmp_path: Path) -> None:
    gateway = Gateway(LiveUpstream("http://127.0.0.1:9/v1", "k"), TOKEN, tcp=False,
                      socket_path=tmp_path / ("s" * 120))

    with pytest.raises(GatewayError, match="cannot listen on unix socket"):
        gateway.start()


def test_starting_twice_is_refused(make_gateway: MakeGateway) -> None:
    with pytest.raises(GatewayError, match="already started"):
        make_gateway().start()
