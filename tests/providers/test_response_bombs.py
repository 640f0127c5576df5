"""Compressed answers are decoded a bounded piece at a time under max_response_bytes (lab.providers.decoding).

The built-in provider against a loopback stub sending gzip bombs, and a
property over :class:`BoundedDecoder`: for any text, coding stack and
chunking, the decoded output is the text when it fits the cap, and otherwise
the cap's error is raised before more than ``cap + PIECE_BYTES`` bytes exist.
"""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Callable

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.providers.decoding import PIECE_BYTES, BoundedDecoder
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.transfer import ResponseTooLarge
from tests.helpers.bombs import gzip, gzip_bomb
from tests.helpers.http_server import LocalHTTPServer, Request, Response

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [], "max_tokens": 8}
CAP = 64 * 1024
BOMB = gzip_bomb(64)

Make = Callable[..., OpenAICompatProvider]


@pytest.mark.parametrize(("body", "encoding"), [(BOMB, "gzip"), (gzip(BOMB), "gzip, gzip")],
                         ids=["gzip-bomb", "gzip-gzip-bomb"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_gzip_bomb_stops_at_the_cap_without_inflating(body: bytes, encoding: str, stream: bool,
                                                         server: LocalHTTPServer, make_openai: Make) -> None:
    def handler(request: Request, response: Response) -> None:
        response.send(200, body, content_type="text/event-stream" if stream else "application/json",
                      headers={"Content-Encoding": encoding})

    server.handler = handler
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLarge, match=rf"max_response_bytes \({CAP} bytes"):
            make_openai(stream=stream, max_retries=0, max_response_bytes=CAP).send(dict(REQUEST))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"{peak} bytes traced: the answer was inflated whole"
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


def test_a_compressed_answer_within_the_cap_is_read(server: LocalHTTPServer, make_openai: Make) -> None:
    answer = (b'{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
              b'"finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}')
    server.handler = lambda request, response: response.send(200, gzip(gzip(answer)),
                                                             headers={"Content-Encoding": "gzip, gzip"})
    exchange = make_openai(stream=False, max_retries=0).send(dict(REQUEST))
    assert exchange["body"]["choices"][0]["message"]["content"] == "ok"


class _TooLarge(Exception):
    pass


def _encode(data: bytes, coding: str) -> bytes:
    if coding == "deflate-raw":
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    if coding == "deflate":
        return zlib.compress(data)
    return gzip(data)


@settings(max_examples=25, deadline=None)
@given(size=st.integers(min_value=0, max_value=2 * PIECE_BYTES), byte=st.integers(0, 255),
       codings=st.lists(st.sampled_from(["gzip", "deflate", "deflate-raw", "identity"]), max_size=3),
       cap=st.integers(min_value=1, max_value=2 * PIECE_BYTES), chunk=st.sampled_from([1, 7, 512, 65536]))
def test_bounded_decoding_gives_the_text_or_stops_at_the_cap(size: int, byte: int, codings: list[str], cap: int,
                                                             chunk: int) -> None:
    text = bytes([byte]) * (size // 2) + bytes(range(256)) * (size // 512)
    raw = text
    for coding in codings:  # applied in order; the header lists them in the same order
        raw = raw if coding == "identity" else _encode(raw, coding)
    header = ", ".join("deflate" if c == "deflate-raw" else c for c in codings)
    decoder = BoundedDecoder(header, cap, lambda total: _TooLarge(total))
    out: list[bytes] = []
    try:
        for start in range(0, len(raw), chunk):
            out.extend(decoder.feed(raw[start:start + chunk]))
    except _TooLarge:
        assert len(text) > cap and cap < decoder.total <= cap + PIECE_BYTES
    else:
        assert b"".join(out) == text and len(text) <= cap


@pytest.mark.parametrize(("header", "message"), [("br", "'br', which was not asked for"),
                                                 ("gzip, gzip, gzip, gzip, gzip", "lists 5 codings")])
def test_a_coding_not_asked_for_is_a_decoding_error(header: str, message: str) -> None:
    with pytest.raises(httpx.DecodingError, match=message):
        BoundedDecoder(header, CAP, _TooLarge)
