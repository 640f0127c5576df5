"""Preflight of the openai provider against a real local server: key, reachability, refusal."""

from __future__ import annotations

import threading

import pytest

from lab.errors import ConfigError, ProviderAuthError, ProviderError
from lab.providers.preflight import preflight
from tests.helpers.http_server import LocalHTTPServer, Request, Response, closed_port_url


def settings(base_url: str, model: str = "gpt-4.1-mini") -> dict[str, str]:
    return {"name": "openai", "base_url": base_url, "api_key_env": "OPENAI_API_KEY", "model": model}


def models(*ids: str) -> dict[str, object]:
    return {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "local"} for i in ids]}


@pytest.mark.parametrize("value", ["", "   "])
def test_missing_key_names_the_variable_and_three_ways(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        preflight(settings("http://127.0.0.1:9/v1"), {"OPENAI_API_KEY": value} if value else {})
    message = str(err.value)
    assert "\n" not in message and "OPENAI_API_KEY is not set" in message
    assert "mode=replay" in message and "provider=scripted" in message and "OPENAI_BASE_URL" in message


def test_scripted_provider_needs_nothing() -> None:
    preflight({"name": "scripted"}, {})


@pytest.mark.parametrize("status", [200, 404])
def test_any_answer_but_a_refusal_passes_with_one_get_models(server: LocalHTTPServer, status: int) -> None:
    server.handler = lambda req, resp: resp.send_json(status, {"data": []})
    preflight(settings(server.url + "/v1/"), {"OPENAI_API_KEY": "k-123"})
    assert [(r.method, r.path, r.headers["authorization"]) for r in server.requests] == [
        ("GET", "/v1/models", "Bearer k-123")]


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_is_an_auth_error(server: LocalHTTPServer, status: int) -> None:
    server.handler = lambda req, resp: resp.send_json(status, {"error": {"message": "bad key"}})
    with pytest.raises(ProviderAuthError, match=f"HTTP {status}: the key in OPENAI_API_KEY was refused"):
        preflight(settings(server.url + "/v1"), {"OPENAI_API_KEY": "k-123"})


def test_unreachable_endpoint_names_the_url_and_the_switch() -> None:
    url = closed_port_url()
    with pytest.raises(ProviderError, match="preflight=false") as err:
        preflight(settings(url), {"OPENAI_API_KEY": "secret-key-value"})
    assert "cannot reach" in str(err.value) and "secret-key-value" not in str(err.value)


def test_a_silent_endpoint_times_out(server: LocalHTTPServer) -> None:
    release = threading.Event()

    def hang(req: Request, resp: Response) -> None:
        release.wait(10)

    server.handler = hang
    try:
        with pytest.raises(ProviderError, match="cannot reach"):
            preflight(settings(server.url + "/v1"), {"OPENAI_API_KEY": "k"}, timeout_s=0.2)
    finally:
        release.set()


def test_a_listed_model_passes(server: LocalHTTPServer) -> None:
    server.handler = lambda req, resp: resp.send_json(200, models("a", "gpt-4.1-mini"))
    preflight(settings(server.url + "/v1"), {"OPENAI_API_KEY": "k"})


def test_an_unlisted_model_is_one_line_naming_the_listed_ones(server: LocalHTTPServer) -> None:
    server.handler = lambda req, resp: resp.send_json(200, models("stub-model", "other"))
    with pytest.raises(ConfigError) as err:
        preflight(settings(server.url + "/v1"), {"OPENAI_API_KEY": "k"})
    assert str(err.value) == (f"provider openai: model 'gpt-4.1-mini' is not among the models {server.url}/v1/models "
                              "lists (stub-model, other); set provider.model=<one of them> "
                              "(or preflight=false to run anyway)")


def test_a_long_list_is_cut_after_eight_names(server: LocalHTTPServer) -> None:
    server.handler = lambda req, resp: resp.send_json(200, models(*(f"m{i}" for i in range(11))))
    with pytest.raises(ConfigError, match=r"\(m0, m1, m2, m3, m4, m5, m6, m7 and 3 more\)"):
        preflight(settings(server.url + "/v1", "x"), {"OPENAI_API_KEY": "k"})


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"data": {}}', b'{"data": [{"name": "x"}]}', b'{"data": []}',
                                  b'{"object": "list"}'])
def test_an_answer_that_lists_no_model_is_not_judged(server: LocalHTTPServer, body: bytes) -> None:
    server.handler = lambda req, resp: resp.send(200, body, content_type="application/json")
    preflight(settings(server.url + "/v1", "x"), {"OPENAI_API_KEY": "k"})


def test_a_list_too_large_is_not_judged(server: LocalHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.providers import preflight as module

    monkeypatch.setattr(module, "MAX_LIST_BYTES", 64)  # the limit itself, made small so the test stays cheap
    server.handler = lambda req, resp: resp.send_json(200, models(*(f"model-{i}" for i in range(20))))
    preflight(settings(server.url + "/v1", "x"), {"OPENAI_API_KEY": "k"})


def test_a_list_that_stalls_after_the_status_line_is_not_judged(server: LocalHTTPServer) -> None:
    release = threading.Event()

    def stall(req: Request, resp: Response) -> None:
        resp.start(200, {"Content-Type": "application/json"}, chunked=True)
        resp.write(b'{"data": [')
        release.wait(10)

    server.handler = stall
    try:
        preflight(settings(server.url + "/v1", "x"), {"OPENAI_API_KEY": "k"}, timeout_s=0.2)
    finally:
        release.set()
