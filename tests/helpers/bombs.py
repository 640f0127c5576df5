"""Compression bombs for response-cap tests: small bodies that inflate far past any cap, built cheaply."""

from __future__ import annotations

import struct
import zlib


def gzip_bomb(megabytes: int) -> bytes:
    """A valid gzip member of ``megabytes`` MiB of zeros, about 1 KiB per MiB.

    Built without compressing every MiB: after a full flush the compressor's
    state repeats, so the middle blocks are one compressed MiB repeated (and
    the trailer's CRC-32 and size are those of the whole text).
    """
    if megabytes < 3:
        raise ValueError("at least 3 MiB")
    block = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    middle = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.compress(block) + packer.flush()
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(block, crc)
    return first + middle * (megabytes - 2) + last[:-8] + struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF)


def gzip(data: bytes) -> bytes:
    """``data`` as one gzip member (for a second layer: ``Content-Encoding: gzip, gzip``)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()
