"""A whole-call deadline under every socket operation of a provider call, headers included.

httpx's timeouts apply to each operation: a read timeout of 60 s allows a
server to send one header byte every 59 s forever, and httpcore reads
``100 Continue`` answers in a loop (each a fresh read) until the real status
line comes, so a server repeating ``HTTP/1.1 100 Continue`` never ends the
call. :mod:`lab.providers.transfer` guards the body once the status line has
arrived; this module covers everything before it.

The httpx transports the lab builds (:func:`guard_transport`,
:func:`guard_async_transport`) hand httpcore a network backend whose streams
clamp each connect, read and write timeout to what is left of the deadline
set by :func:`call_deadline` in the calling thread or task (a
:class:`contextvars.ContextVar`), and raise httpcore's ``ReadTimeout`` /
``WriteTimeout`` / ``ConnectTimeout`` once it has passed. httpx maps those
to its own ``TimeoutException``, so callers report a timeout as they always
did. Outside :func:`call_deadline` the streams behave exactly as httpcore's.
"""

from __future__ import annotations

import contextvars
import time
import typing
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import httpcore
import httpx

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("lab_call_deadline", default=None)

SocketOption = typing.Union[tuple[int, int, int], tuple[int, int, typing.Union[bytes, bytearray]],
                            tuple[int, int, None, int]]


@contextmanager
def call_deadline(remaining_s: float) -> Iterator[None]:
    """Every socket operation of a guarded transport in this thread/task ends ``remaining_s`` seconds from now."""
    token = _DEADLINE.set(time.monotonic() + remaining_s)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _clamp(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[SocketOption] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _clamp(timeout, httpcore.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[SocketOption] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _clamp(timeout, httpcore.ConnectTimeout),
                                                       socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._inner.start_tls(ssl_context, server_hostname,
                                                        _clamp(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[SocketOption] | None = None) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._inner.connect_tcp(host, port, _clamp(timeout, httpcore.ConnectTimeout),
                                                          local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[SocketOption] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self._inner.connect_unix_socket(
            path, _clamp(timeout, httpcore.ConnectTimeout), socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


_Transport = typing.TypeVar("_Transport", httpx.HTTPTransport, httpx.AsyncHTTPTransport)


def _guard(transport: _Transport, wrapper: type[typing.Any]) -> _Transport:
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None:
        raise TypeError(f"httpx.{type(transport).__name__} has no _pool._network_backend: "
                        "the call deadline cannot be set")
    if not isinstance(backend, wrapper):
        pool._network_backend = wrapper(backend)  # type: ignore[union-attr]
    return transport


def guard_transport(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """``transport`` with its connection pool's network backend wrapped (see the module docstring).

    Raises:
        TypeError: httpx no longer keeps its pool where this expects (an httpx upgrade; caught by the tests).
    """
    return _guard(transport, _Backend)


def guard_async_transport(transport: httpx.AsyncHTTPTransport) -> httpx.AsyncHTTPTransport:
    """The asynchronous :func:`guard_transport`."""
    return _guard(transport, _AsyncBackend)
