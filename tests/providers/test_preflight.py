"""Preflight of the openai provider against a real local server: key, reachability, refusal."""

from __future__ import annotations

import threading

import pytest

from lab.errors import ConfigError, ProviderAuthError, ProviderError
from lab.providers.preflight import preflight
from tests.helpers.http_server import LocalHTTPServer, Request, Response, closed_port_url


def settings(base_url: str) -> dict[str, str]:
    return {"name": "openai", "base_url": base_url, "api_key_env": "OPENAI_API_KEY"}


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
