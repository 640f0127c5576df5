"""Fixtures for provider tests: a real local HTTP server and provider factories."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lab.providers.openai_compat import OpenAICompatProvider
from tests.helpers.http_server import LocalHTTPServer


@pytest.fixture(scope="session")
def http_server() -> Iterator[LocalHTTPServer]:
    """One real server for the whole session (127.0.0.1, port 0, in a thread)."""
    with LocalHTTPServer() as server:
        yield server


@pytest.fixture
def server(http_server: LocalHTTPServer) -> Iterator[LocalHTTPServer]:
    """The session server with no handler installed; fails the test if a handler raised."""
    http_server.reset()
    yield http_server
    errors = list(http_server.errors)
    http_server.reset()
    assert not errors, f"a request handler raised: {errors!r}"


@pytest.fixture
def release(server: LocalHTTPServer) -> Iterator[threading.Event]:
    """An event a hanging handler waits on; set at teardown so the handler thread ends."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def api_key() -> str:
    return "sk-test-0123456789abcdef"


@pytest.fixture
def sleeps() -> list[float]:
    """Every wait the provider asked for (the injected sleep records instead of sleeping)."""
    return []


@pytest.fixture
def make_openai(server: LocalHTTPServer, sleeps: list[float],
                api_key: str) -> Callable[..., OpenAICompatProvider]:
    """Factory: an OpenAICompatProvider aimed at ``server`` (keyword overrides allowed)."""

    def make(**overrides: Any) -> OpenAICompatProvider:
        options: dict[str, Any] = {
            "base_url": server.url + "/v1", "api_key_env": "TEST_API_KEY", "stream": True,
            "timeout_s": 5.0, "max_retries": 2, "env": {"TEST_API_KEY": api_key},
            "sleep": sleeps.append,
        }
        options.update(overrides)
        return OpenAICompatProvider(**options)

    return make
