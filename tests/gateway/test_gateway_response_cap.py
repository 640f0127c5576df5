"""The gateway applies provider.max_response_bytes and bounded decoding, as the built-in provider does.

A loopback provider stub answers with an oversized body, a gzip bomb (a few
KiB that inflate to 64 MiB) and a two-layer bomb (``Content-Encoding: gzip,
gzip``: 234 bytes, 64 MiB). Each must reach the command agent as the
gateway's ``response_too_large`` error answer, make the run an error naming
that cause, and never exist whole in the lab's memory (traced peak).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator

import httpx
import pytest

from lab.execute.gateway_verdict import gateway_error
from lab.gateway import Gateway, LiveUpstream, RetryPolicy
from tests.helpers.bombs import gzip, gzip_bomb
from tests.helpers.gateway_support import AUTH, REAL_KEY
from tests.helpers.http_server import LocalHTTPServer, Request, Response

MakeGateway = Callable[..., Gateway]
CAP = 64 * 1024
BOMB = gzip_bomb(64)
ANSWERS: dict[str, tuple[bytes, str | None]] = {
    "oversized": (b'{"x": "' + b"x" * (4 * CAP) + b'"}', None),
    "gzip-bomb": (BOMB, "gzip"),
    "gzip-gzip-bomb": (gzip(BOMB), "gzip, gzip"),
}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


def answer_with(body: bytes, encoding: str | None, content_type: str) -> Callable[[Request, Response], None]:
    def handler(request: Request, response: Response) -> None:
        headers = {"Content-Encoding": encoding} if encoding else {}
        response.send(200, body, content_type=content_type, headers=headers)
    return handler


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_an_oversized_or_bomb_answer_is_an_error_answer_and_never_whole_in_memory(
        kind: str, stream: bool, make_gateway: MakeGateway, provider: LocalHTTPServer,
        client: httpx.Client) -> None:
    body, encoding = ANSWERS[kind]
    provider.handler = answer_with(body, encoding, "text/event-stream" if stream else "application/json")
    gateway = make_gateway(LiveUpstream(provider.url + "/v1", REAL_KEY, timeout_s=10, max_response_bytes=CAP),
                           retry=RetryPolicy(max_retries=0))
    tracemalloc.start()
    try:
        answer = client.post(gateway.address.base_url + "/chat/completions", headers=AUTH,
                             json={"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": stream})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "response_too_large" in answer.text
    if not stream:
        assert (answer.status_code, answer.json()["error"]["code"]) == (502, "response_too_large")
    assert peak < 16 * 1024 * 1024, f"{peak} bytes traced: the answer was inflated whole"
    assert [f["cause"] for f in gateway.stats.faults] == ["response_too_large"]
    error = gateway_error(gateway.stats, None, "codex")
    assert error is not None and error["cause"] == "response_too_large"
    assert "max_response_bytes" in error["message"]


def test_an_encoding_the_gateway_did_not_ask_for_is_refused(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                            client: httpx.Client) -> None:
    seen: list[str] = []

    def handler(request: Request, response: Response) -> None:
        seen.append(request.headers.get("accept-encoding", ""))
        response.send(200, b"\x1b\x00", headers={"Content-Encoding": "br"})

    provider.handler = handler
    gateway = make_gateway(LiveUpstream(provider.url + "/v1", REAL_KEY, timeout_s=10),
                           retry=RetryPolicy(max_retries=0))
    answer = client.post(gateway.address.base_url + "/chat/completions", headers=AUTH,
                         json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert answer.status_code == 502 and answer.json()["error"]["code"] == "invalid_response"
    assert "'br', which was not asked for" in answer.json()["error"]["message"]
    assert seen == ["gzip, deflate"]
