"""Request bodies in every Content-Encoding agents send are decoded, or refused with a JSON error naming the
encoding (counted); nothing the gateway meets prints a traceback, a client gone mid-stream included."""

from __future__ import annotations

import gzip
import json
import logging
import socket
import threading
import zlib
from collections.abc import Callable, Iterator

import brotli
import httpx
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.gateway import Gateway
from lab.gateway.bodies import BodyEncodingError, decode_body
from tests.helpers.gateway_support import AUTH, TOKEN
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]
CLIENT = httpx.Client(verify=False, timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client() -> Iterator[None]:
    """The module's client is closed with its connections once the module's tests are done."""
    yield
    CLIENT.close()

ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,  # RFC 1950, as the HTTP spec means it
    "br": brotli.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
    "identity": lambda data: data,
}


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=2000), codings=st.lists(st.sampled_from(sorted(ENCODERS)), max_size=3))
def test_every_coding_and_chain_of_codings_decodes_to_the_body(data: bytes, codings: list[str]) -> None:
    encoded = data
    for coding in codings:
        encoded = ENCODERS[coding](encoded)

    assert decode_body(encoded, ", ".join(codings), limit=10_000) == data


def test_a_raw_deflate_stream_is_accepted_as_browsers_do() -> None:
    assert decode_body(raw_deflate(b'{"a": 1}'), "deflate", 100) == b'{"a": 1}'


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_body_that_decodes_past_the_limit_is_refused(coding: str) -> None:
    with pytest.raises(BodyEncodingError, match=f"past 1000 bytes .Content-Encoding '{coding}'"):
        decode_body(ENCODERS[coding](b"{" + b" " * 100_000 + b"}"), coding, 1000)


@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "deflate", "br", "zstd"])
def test_the_gateway_forwards_the_decoded_body(coding: str, make_gateway: MakeGateway, provider: LocalHTTPServer) -> None:
    provider.handler = ScriptedStub([Turn(text="ok")])
    gateway = make_gateway()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "é" * 50}]}).encode()

    response = CLIENT.post(gateway.address.base_url + "/chat/completions", content=ENCODERS[coding](body),
                           headers={**AUTH, "Content-Type": "application/json", "Content-Encoding": coding})

    assert response.status_code == 200, response.text
    assert provider.requests[0].json()["messages"][0]["content"] == "é" * 50
    assert "content-encoding" not in provider.requests[0].headers


@pytest.mark.parametrize(("coding", "body", "status", "kind", "words"), [
    ("compress", b"\x1f\x9d...", 415, "unsupported_encoding", "Content-Encoding 'compress' is not supported"),
    ("gzip", b"not gzip at all", 400, "invalid_encoding", "does not decode as Content-Encoding 'gzip'"),
    ("zstd", b"\x28\xb5\x2f\xfd broken", 400, "invalid_encoding", "does not decode as Content-Encoding 'zstd'"),
    ("br", b"\xff\xff\xff\xff", 400, "invalid_encoding", "does not decode as Content-Encoding 'br'"),
])
def test_a_body_the_gateway_cannot_decode_is_refused_by_name_and_counted(
        coding: str, body: bytes, status: int, kind: str, words: str, make_gateway: MakeGateway,
        provider: LocalHTTPServer, caplog: pytest.LogCaptureFixture) -> None:
    gateway = make_gateway()
    caplog.set_level(logging.DEBUG)

    response = CLIENT.post(gateway.address.base_url + "/chat/completions", content=body,
                           headers={**AUTH, "Content-Type": "application/json", "Content-Encoding": coding})

    assert response.status_code == status
    assert response.json()["error"]["type"] == kind and words in response.json()["error"]["message"]
    assert not provider.requests
    assert (gateway.stats.refused, gateway.stats.unserved) == (1, (f"POST /v1/chat/completions ({status} {kind})",))
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_an_agent_gone_mid_stream_leaves_no_traceback(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                      release: threading.Event,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The agent closes its connection after the first output; the gateway then writes the rest and the
    end of the stream to a closing transport ("Cannot write to closing transport")."""
    first = b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n'
    rest = [b'data: {"choices": [{"index": 0, "delta": {"content": "b"}}]}\n\n',
            b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n', b"data: [DONE]\n\n"]
    done = threading.Event()

    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        response.write(first)
        release.wait(10)
        try:
            for event in rest:
                response.write(event)
            response.end()
        except OSError:
            pass  # the gateway, having met the closed agent, may close this stream before its end
        finally:
            done.set()

    provider.handler = handler
    gateway = make_gateway()
    caplog.set_level(logging.DEBUG)
    port = int(gateway.address.base_url.rsplit(":", 1)[1].split("/")[0])
    body = b'{"model": "m", "stream": true}'
    with socket.create_connection(("127.0.0.1", port)) as agent:
        agent.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        received = b""
        while b'"a"' not in received:
            received += agent.recv(4096)
        agent.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset on close
    release.set()
    assert done.wait(10)
    gateway.stop()  # waits for the handler: whatever it met has happened

    assert gateway.internal_errors == []
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], \
        [r.getMessage() for r in caplog.records]
