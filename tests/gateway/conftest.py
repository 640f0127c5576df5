"""Fixtures for gateway tests: a real stub provider on loopback and gateways in front of it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lab.gateway import Gateway, GatewayBudget, LiveUpstream, Upstream
from tests.helpers.gateway_support import REAL_KEY, TOKEN, Halts
from tests.helpers.http_server import LocalHTTPServer


@pytest.fixture(scope="session")
def provider_server() -> Iterator[LocalHTTPServer]:
    """One stub provider for the session (stdlib ThreadingHTTPServer on 127.0.0.1:0)."""
    with LocalHTTPServer() as server:
        yield server


@pytest.fixture
def provider(provider_server: LocalHTTPServer) -> Iterator[LocalHTTPServer]:
    """The stub provider with no handler; fails the test if a handler raised."""
    provider_server.reset()
    yield provider_server
    errors = list(provider_server.errors)
    provider_server.reset()
    assert not errors, f"a stub handler raised: {errors!r}"


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event a waiting stub handler blocks on; set at teardown so its thread ends."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def halts() -> Halts:
    return Halts()


@pytest.fixture
def make_gateway(provider: LocalHTTPServer, halts: Halts) -> Iterator[Callable[..., Gateway]]:
    """Factory: a started gateway (live upstream to ``provider`` with REAL_KEY unless
    ``upstream`` is given); every gateway is stopped at teardown."""
    started: list[Gateway] = []

    def make(upstream: Upstream | None = None, budget: GatewayBudget | None = None,
             **options: Any) -> Gateway:
        upstream = upstream or LiveUpstream(provider.url + "/v1", REAL_KEY, timeout_s=10)
        gateway = Gateway(upstream, TOKEN, budget, halts, **options)
        gateway.start()
        started.append(gateway)
        return gateway

    yield make
    for gateway in started:
        gateway.stop()

