"""A real HTTP server for tests: stdlib ThreadingHTTPServer on 127.0.0.1, port 0, in a thread.

Handlers are plain functions ``handler(request, response)`` (return value ignored). Install
one per test; every request is recorded in ``server.requests``; a handler
that raises is recorded in ``server.errors`` (check it at teardown)::

    with LocalHTTPServer() as server:
        server.handler = lambda req, resp: resp.send_json(200, {"ok": True})
        httpx.post(server.url + "/v1/x", json={})
        assert server.requests[0].json() == {}

``Response`` gives byte-level control for wire tests: ``start`` (optionally
chunked), ``write`` (each call is one flushed send; TCP_NODELAY is set so
small writes leave as separate segments), ``end``, ``close`` (FIN, possibly
mid-body) and ``reset`` (RST). A handler that must hang should block on a
``threading.Event`` the test sets at teardown, never on a sleep. Writes that
fail because the client already left are ignored.
"""

from __future__ import annotations

import errno
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Request:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Response:
    """Writes the answer to one request on the raw socket."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler
        self._chunked = False
        self.started = False

    def start(self, status: int, headers: dict[str, str] | None = None, *, chunked: bool = False) -> None:
        """Send the status line and headers (``Connection: close`` is always added)."""
        self._chunked = chunked
        self.started = True
        handler = self._handler
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()

    def write(self, data: bytes) -> None:
        """Send ``data`` now (as one chunk when the response is chunked)."""
        if self._chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self._handler.wfile.write(data)
        self._handler.wfile.flush()

    def write_pieces(self, data: bytes, pieces: Iterable[int] | int) -> None:
        """Send ``data`` in several writes: every ``n`` bytes, or split at the given offsets."""
        if isinstance(pieces, int):
            cuts = list(range(pieces, len(data), pieces))
        else:
            cuts = sorted(set(p for p in pieces if 0 < p < len(data)))
        start = 0
        for cut in [*cuts, len(data)]:
            self.write(data[start:cut])
            start = cut

    def end(self) -> None:
        """Finish a chunked body (no-op otherwise)."""
        if self._chunked:
            self._handler.wfile.write(b"0\r\n\r\n")
            self._handler.wfile.flush()

    def close(self) -> None:
        """Close the connection now (a FIN), e.g. in the middle of a body."""
        self._handler.wfile.flush()
        self._handler.connection.shutdown(socket.SHUT_RDWR)

    def reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0, then close)."""
        connection = self._handler.connection
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()

    def send(self, status: int, body: bytes = b"", *, content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> None:
        """A complete answer with ``Content-Length``."""
        self.start(status, {"Content-Type": content_type, "Content-Length": str(len(body)),
                            **(headers or {})})
        self.write(body)

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self.send(status, json.dumps(obj).encode("utf-8"), headers=headers)


Handler = Callable[[Request, Response], object]  # the return value is ignored


class LocalHTTPServer:
    """The server; use as a context manager (or ``start``/``stop``).

    Attributes:
        url: ``http://127.0.0.1:<port>`` (no trailing slash).
        handler: the function answering every request; None answers 500.
        requests: every request received, in order.
        errors: exceptions raised by handlers.
    """

    def __init__(self) -> None:
        self.handler: Handler | None = None
        self.requests: list[Request] = []
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _RequestHandler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="test-http-server", daemon=True)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> LocalHTTPServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def reset(self) -> None:
        """Forget the handler, requests and errors (between tests)."""
        with self.lock:
            self.handler = None
            self.requests.clear()
            self.errors.clear()

    def __enter__(self) -> LocalHTTPServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


_HELD: list[socket.socket] = []


def closed_port_url() -> str:
    """``http://127.0.0.1:<port>`` where nothing listens: a port this process keeps bound and never listens
    on, so a connection is refused and no other process (a gateway of a test on another worker asking for
    any free port) can take it. A port bound and then released could be given to the next one that asks."""
    if not _HELD:
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.bind(("127.0.0.1", 0))
        _HELD.append(held)
    return f"http://127.0.0.1:{_HELD[0].getsockname()[1]}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalHTTPServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # handler failures are recorded in owner.errors; client disconnects are expected


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(request)
            handler = owner.handler
        self.close_connection = True
        response = Response(self)
        try:
            if handler is None:
                response.send(500, b"no handler installed", content_type="text/plain")
            else:
                handler(request, response)
        except ConnectionError:
            pass  # the client left (it timed out or was reset): expected in fault tests
        except OSError as exc:
            if exc.errno != errno.EBADF:  # EBADF: writing after Response.reset()
                owner.errors.append(exc)
        except BaseException as exc:  # recorded so the test fails at teardown, not silently
            owner.errors.append(exc)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean
