"""Reading one provider answer under an overall deadline and a size cap.

httpx's read timeout applies to each read, so a server that sends an SSE
keep-alive comment every few seconds, or trickles a body a byte at a time,
never trips it. ``deadline_guard`` ends the transfer at the call's deadline
whatever the server sends: at the deadline, the process's one watchdog thread
shuts the connection's socket down
(``response.extensions["network_stream"]``, an httpx extension), which wakes
the blocked read; the caller then reports a timeout.

``capped`` (and ``acapped`` for the gateway's asynchronous client) decodes
the raw body a bounded piece at a time (:mod:`lab.providers.decoding`),
counts the decoded bytes as they arrive and stops at ``max_response_bytes``
without keeping what came before, so neither an oversized answer nor a
compression bomb costs memory or disk.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

import httpx

from lab.errors import ProviderError
from lab.providers.decoding import BoundedDecoder


class ResponseTooLarge(ProviderError):
    """The answer passed ``provider.max_response_bytes``; its body is not kept."""

    cause = "response_too_large"


@contextmanager
def deadline_guard(response: httpx.Response, remaining_s: float) -> Iterator[threading.Event]:
    """Shut ``response``'s connection down ``remaining_s`` seconds from now.

    Yields:
        An event that is set when the guard fired, so the caller can tell a
        read cut by the deadline from any other connection fault.
    """
    fired = threading.Event()
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None

    def fire() -> None:
        fired.set()
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: the transfer is over anyway
    entry = _WATCHDOG.schedule(remaining_s, fire)
    try:
        yield fired
    finally:
        _WATCHDOG.cancel(entry)


class _Watchdog:
    """Calls each scheduled function once at its time, from one daemon thread per process.

    A guard per model call costs a heap entry, not a thread (``threading.Timer``
    starts one per call); the thread starts with the first guard.
    """

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay_s: float, function: Callable[[], None]) -> tuple[float, int, Callable[[], None]]:
        """Call ``function`` ``delay_s`` seconds from now (at once if <= 0); returns the entry to cancel."""
        entry = (time.monotonic() + max(0.0, delay_s), next(self._ids), function)
        with self._wake:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="lab-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:
                self._wake.notify()  # due before whatever the thread waits for
        return entry

    def cancel(self, entry: tuple[float, int, Callable[[], None]]) -> None:
        """Drop ``entry`` if it has not been called yet."""
        with self._wake:
            try:
                self._heap.remove(entry)
            except ValueError:
                return  # already called (or being called)
            heapq.heapify(self._heap)

    def _loop(self) -> None:
        with self._wake:
            while True:
                if not self._heap:
                    self._wake.wait()
                    continue
                wait_s = self._heap[0][0] - time.monotonic()
                if wait_s > 0:
                    self._wake.wait(wait_s)
                    continue
                function = heapq.heappop(self._heap)[2]
                self._wake.release()
                try:
                    function()
                finally:
                    self._wake.acquire()


_WATCHDOG = _Watchdog()


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes], decoder: BoundedDecoder, check: Callable[[], None]) -> None:
        self._chunks, self._decoder, self._check = chunks, decoder, check

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            self._check()
            yield from self._decoder.feed(chunk)


class _AsyncCappedStream(httpx.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes], decoder: BoundedDecoder) -> None:
        self._chunks, self._decoder = chunks, decoder

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            for piece in self._decoder.feed(chunk):
                yield piece


def _plain_headers(response: httpx.Response) -> list[tuple[str, str]]:
    return [(k, v) for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]


def capped(response: httpx.Response, limit: int, too_large: Callable[[int], Exception],
           check: Callable[[], None] = lambda: None) -> httpx.Response:
    """A response whose body is ``response``'s decoded body, read lazily, refused past ``limit`` bytes.

    The raw body is decoded by :class:`lab.providers.decoding.BoundedDecoder`
    (a compression bomb stops at the cap, not after inflating).

    Args:
        response: an open streaming response.
        limit: the most decoded bytes accepted.
        too_large: builds the error raised with the byte count reached.
        check: called before each chunk is counted (e.g. a deadline check
            where no socket can be shut down).

    Raises:
        httpx.DecodingError: a ``Content-Encoding`` the lab did not ask for (reading the body
            raises it too, for a stream that does not decode).
    """
    decoder = BoundedDecoder(response.headers.get("content-encoding"), limit, too_large)
    return httpx.Response(response.status_code, headers=_plain_headers(response), request=response.request,
                          stream=_CappedStream(response.iter_raw(), decoder, check))


def acapped(response: httpx.Response, limit: int, too_large: Callable[[int], Exception]) -> httpx.Response:
    """The asynchronous :func:`capped`, for a response of an ``httpx.AsyncClient`` (the gateway)."""
    decoder = BoundedDecoder(response.headers.get("content-encoding"), limit, too_large)
    return httpx.Response(response.status_code, headers=_plain_headers(response), request=response.request,
                          stream=_AsyncCappedStream(response.aiter_raw(), decoder))


def sse_fields(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``("data", joined data)`` per SSE event and ``("error", value)`` per ``error:`` line.

    Follows the SSE event-stream rules (https://html.spec.whatwg.org/multipage/server-sent-events.html):
    ``data`` lines of one event join with ``\\n``, a blank line ends the event,
    comments and ``event`` / ``id`` / ``retry`` fields carry no data, an event
    cut off by the end of the stream is dropped. ``error``
    is no SSE field; some servers (llama.cpp) report failures on such a line,
    which an SSE client would drop silently.
    """
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "data", "\n".join(data)
            data = []
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "error":
            yield "error", value


DRAIN_GRACE_S = 1.0
"""Seconds a streamed answer's body is read past ``[DONE]`` for its connection to be reused."""


def drain_after_done(lines: Iterator[str], response: httpx.Response) -> None:
    """Read what follows ``[DONE]`` (at most ``DRAIN_GRACE_S``) so an HTTP/1.1 connection whose
    body ends there returns to the pool; a server that keeps the stream open is not waited for
    (its connection is shut down and dropped), and nothing after ``[DONE]`` counts."""
    with deadline_guard(response, DRAIN_GRACE_S):
        try:
            for _ in lines:
                pass
        except (httpx.HTTPError, ProviderError):
            pass  # the answer is complete; only the connection is lost
