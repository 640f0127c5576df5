"""The call deadline covers the status line and headers (lab.providers.deadline).

Real raw-socket servers on 127.0.0.1: one trickles its response headers a
byte at a time (each byte well inside httpx's per-read timeout), one repeats
``HTTP/1.1 100 Continue`` forever. Both held the built-in agent's call
forever before; each must now end at the call's deadline as a
``ProviderTimeout`` naming what did not arrive, and the gateway's live
upstream as an ``UpstreamError`` of cause ``timeout``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import ProviderTimeout
from lab.gateway.errors import UpstreamError
from lab.gateway.upstream import LiveUpstream, UpstreamRequest
from lab.providers.openai_compat import OpenAICompatProvider
from tests.helpers.raw_server import raw_server, trickle

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [], "max_tokens": 8}
DEADLINE_S = 0.4


def provider(url: str, timeout_s: float) -> OpenAICompatProvider:
    return OpenAICompatProvider(url, "KEY", stream=False, timeout_s=timeout_s, max_retries=0,
                                env={"KEY": "sk-test-0123456789abcdef"})


@pytest.mark.parametrize("fault", [trickle(0.02), trickle(0.02, forever_continue=True)],
                         ids=["header-trickle", "repeated-100-continue"])
def test_the_builtin_provider_call_ends_at_its_deadline(fault: Callable[[socket.socket, threading.Event],
                                                                        None]) -> None:
    with raw_server(fault) as url:
        started = time.monotonic()
        with pytest.raises(ProviderTimeout, match=rf"no status line and headers within {DEADLINE_S:.2f} s"):
            provider(url, DEADLINE_S).send(dict(REQUEST))
        assert time.monotonic() - started < DEADLINE_S + 1.0


def test_a_trickle_faster_than_the_deadline_still_answers() -> None:
    with raw_server(trickle(0.0)) as url:
        exchange = provider(url, 5.0)._attempt(dict(REQUEST), "sk-test-0123456789abcdef", time.monotonic() + 5.0)
    assert exchange == {"type": "json", "status": 200, "body": {}}


def test_the_raw_server_reads_the_whole_request_before_its_fault() -> None:
    """A socket closed with unread request bytes ends in a reset that can overtake the answer."""
    unread: list[bytes] = []

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        try:
            unread.append(conn.recv(65536, socket.MSG_DONTWAIT))
        except BlockingIOError:
            pass
        trickle(0.0)(conn, stop)

    with raw_server(answer) as url:
        big = dict(REQUEST, messages=[{"role": "user", "content": "x" * 200_000}])
        exchange = provider(url, 5.0)._attempt(big, "sk-test-0123456789abcdef", time.monotonic() + 5.0)
    assert exchange == {"type": "json", "status": 200, "body": {}}
    assert unread == []


@pytest.mark.parametrize("fault", [trickle(0.02), trickle(0.02, forever_continue=True)],
                         ids=["header-trickle", "repeated-100-continue"])
def test_the_gateway_upstream_ends_at_its_deadline(fault: Callable[[socket.socket, threading.Event],
                                                                   None]) -> None:
    async def call(url: str) -> None:
        upstream = LiveUpstream(url, "sk-test-0123456789abcdef", timeout_s=DEADLINE_S)
        try:
            await upstream.send(UpstreamRequest("chat", "chat/completions", dict(REQUEST), b"{}", False, 0))
        finally:
            await upstream.aclose()

    with raw_server(fault) as url:
        started = time.monotonic()
        with pytest.raises(UpstreamError, match="no status line and headers") as caught:
            asyncio.run(call(url))
        assert caught.value.cause == "timeout"
        assert time.monotonic() - started < DEADLINE_S + 1.0


@settings(max_examples=6, deadline=None)
@given(st.integers(min_value=0, max_value=50), st.floats(min_value=0.005, max_value=0.05),
       st.booleans())
def test_any_slow_header_phase_ends_within_the_deadline(continues: int, gap_s: float, endless: bool) -> None:
    with raw_server(trickle(gap_s, continues, endless)) as url:
        started = time.monotonic()
        with pytest.raises(ProviderTimeout):
            provider(url, 0.15).send(dict(REQUEST))
        assert time.monotonic() - started < 0.15 + 1.0
