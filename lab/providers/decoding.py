"""Decoding a provider's answer under a size cap, a bounded piece at a time.

httpx undoes ``Content-Encoding`` one network chunk at a time with no limit
on the output: 64 KiB of gzip can inflate to 64 MiB in one step, and a
stacked coding (``gzip, gzip``) multiplies the ratios, so a "gzip bomb" of a
few kilobytes costs gigabytes before any size check sees a byte. The lab
therefore reads the raw body (``iter_raw``) and decodes it here: each coding
of the list is undone in reverse order (RFC 9110 §8.4) by a streaming
:mod:`zlib` decompressor asked for at most :data:`PIECE_BYTES` of output per
step, and the decoded total is counted as it grows, so the cap is enforced
before more than ``limit + PIECE_BYTES`` bytes ever exist.

Codings: the lab asks only for what it decodes this way
(:data:`ACCEPT_ENCODING`: ``gzip`` and ``deflate``; ``x-gzip`` and
``identity`` are understood too, and ``deflate`` accepts a raw RFC 1951
stream as browsers do). An answer in any other coding was not asked for and
is refused as undecodable (``httpx.DecodingError``), as is a corrupt stream.
Used by the built-in provider and by the gateway
(:func:`lab.providers.transfer.capped`, :func:`~lab.providers.transfer.acapped`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator

import httpx

ACCEPT_ENCODING = "gzip, deflate"
"""The ``Accept-Encoding`` every provider call sends: the codings :class:`BoundedDecoder` undoes."""

PIECE_BYTES = 64 * 1024
"""The most decoded bytes one decompression step produces."""

MAX_CODINGS = 4
"""The most codings one ``Content-Encoding`` may list (``gzip, gzip`` is two)."""

_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _Inflate:
    """One zlib stream (gzip or deflate), producing at most ``PIECE_BYTES`` per step."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._inflater = zlib.decompressobj(_ZLIB_WBITS[coding])
        self._head: bytes | None = b"" if coding == "deflate" else None  # held until the header is known

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        if self._head is not None:  # deflate: a zlib stream (RFC 1950) or a raw one (RFC 1951)?
            self._head += data
            if len(self._head) < 2:
                return
            pending, self._head = self._head, None
            cmf, flg = pending[0], pending[1]
            if cmf & 0x0F != zlib.DEFLATED or (cmf * 256 + flg) % 31:  # no zlib header
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        while True:
            try:
                out = self._inflater.decompress(pending, PIECE_BYTES)
            except zlib.error as exc:
                raise httpx.DecodingError(f"the answer does not decode as Content-Encoding "
                                          f"{self._coding!r}: {exc}") from None
            if out:
                yield out
            pending = self._inflater.unconsumed_tail
            if self._inflater.eof or (not pending and len(out) < PIECE_BYTES):
                return


class BoundedDecoder:
    """Undoes ``content_encoding`` on a raw body fed chunk by chunk, refusing output past ``limit`` bytes.

    Args:
        content_encoding: the answer's ``Content-Encoding`` value, or None.
        limit: the most decoded bytes accepted.
        too_large: builds the exception raised with the decoded byte count reached.

    Raises:
        httpx.DecodingError: a coding the lab did not ask for (names it), or more than
            :data:`MAX_CODINGS` of them.
    """

    def __init__(self, content_encoding: str | None, limit: int,
                 too_large: Callable[[int], Exception]) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        if len(codings) > MAX_CODINGS:
            raise httpx.DecodingError(f"the answer's Content-Encoding lists {len(codings)} codings "
                                      f"(at most {MAX_CODINGS} are undone)")
        self._stages: list[_Inflate] = []
        for coding in reversed(codings):
            if coding == "identity":
                continue
            if coding not in _ZLIB_WBITS:
                raise httpx.DecodingError(f"the answer came with Content-Encoding {coding!r}, which was not "
                                          f"asked for (Accept-Encoding: {ACCEPT_ENCODING})")
            self._stages.append(_Inflate(coding))
        self._limit, self._too_large, self.total = limit, too_large, 0

    def feed(self, raw: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``raw``, counted against the limit.

        Raises:
            the ``too_large`` exception: the decoded total passed ``limit``.
            httpx.DecodingError: the body does not decode.
        """
        for piece in self._through(raw, 0):
            self.total += len(piece)
            if self.total > self._limit:
                raise self._too_large(self.total)
            yield piece

    def _through(self, data: bytes, stage: int) -> Iterator[bytes]:
        if stage == len(self._stages):
            if data:
                yield data
            return
        for piece in self._stages[stage].feed(data):
            yield from self._through(piece, stage + 1)
