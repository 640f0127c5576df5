"""Request bodies as agents send them: ``Content-Encoding`` gzip, deflate, br, zstd (RFC 9110 §8.4).

Some agents compress their requests (Codex sends ``zstd``). The gateway reads
the body as sent (aiohttp's own decoding is off) and decodes it here, each
coding of a list such as ``gzip, br`` undone in reverse order. The decoded
body is capped at ``limit`` bytes, so a small compressed body cannot expand
without bound. Codings: ``gzip``/``x-gzip`` and ``deflate`` (zlib, RFC 1950;
a raw RFC 1951 stream is accepted too, as browsers do) with :mod:`zlib`,
``br`` (RFC 7932) with ``brotli``, ``zstd`` (RFC 8878) with ``zstandard``;
``identity`` is no coding.
"""

from __future__ import annotations

import io
import zlib

KNOWN = ("gzip", "x-gzip", "deflate", "br", "zstd", "identity")


class BodyEncodingError(ValueError):
    """A body the gateway cannot decode.

    Attributes:
        encoding: the coding at fault, as the request named it.
        unsupported: True for a coding the gateway does not know (HTTP 415),
            False for a body that does not decode as the coding says (HTTP 400).
    """

    def __init__(self, message: str, *, encoding: str, unsupported: bool) -> None:
        super().__init__(message)
        self.encoding = encoding
        self.unsupported = unsupported


def decode_body(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body with every coding named in ``content_encoding`` undone.

    Args:
        raw: the body as received.
        content_encoding: the header's value, or None.
        limit: the most decoded bytes accepted.

    Raises:
        BodyEncodingError: an unknown coding, a body that does not decode, or
            one that decodes past ``limit`` (names the coding).
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding not in KNOWN:
            raise BodyEncodingError(f"Content-Encoding {coding!r} is not supported "
                                    f"(supported: gzip, deflate, br, zstd)", encoding=coding, unsupported=True)
        try:
            raw = _decode(coding, raw, limit)
        except BodyEncodingError:
            raise
        except Exception as exc:  # each library raises its own error type for a corrupt stream
            raise BodyEncodingError(f"the body does not decode as Content-Encoding {coding!r}: "
                                    f"{type(exc).__name__}: {exc}", encoding=coding, unsupported=False) from None
    return raw


def _decode(coding: str, raw: bytes, limit: int) -> bytes:
    if coding == "identity":
        return raw
    if coding in ("gzip", "x-gzip"):
        return _zlib(raw, 16 + zlib.MAX_WBITS, limit, coding)
    if coding == "deflate":
        try:
            return _zlib(raw, zlib.MAX_WBITS, limit, coding)
        except zlib.error:
            return _zlib(raw, -zlib.MAX_WBITS, limit, coding)
    if coding == "br":
        import brotli  # type: ignore[import-untyped]  # no type information published

        out: bytes = brotli.Decompressor().process(raw)
        return _capped(out, limit, coding)
    import zstandard

    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
        return _capped(reader.read(limit + 1), limit, coding)


def _zlib(raw: bytes, wbits: int, limit: int, coding: str) -> bytes:
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(raw, limit + 1)
    if not inflater.eof:
        _capped(out, limit, coding)
        raise zlib.error("the compressed stream is truncated")
    return _capped(out, limit, coding)


def _capped(out: bytes, limit: int, coding: str) -> bytes:
    if len(out) > limit:
        raise BodyEncodingError(f"the body decodes past {limit} bytes (Content-Encoding {coding!r})",
                                encoding=coding, unsupported=False)
    return out
