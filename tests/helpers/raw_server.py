"""A raw-socket HTTP server on 127.0.0.1 for faults no well-behaved HTTP server can send.

``raw_server(fault)`` reads each request (head and body) and hands the connection to
``fault``: e.g. :func:`trickle`, which sends ``100 Continue`` answers and then
the response headers a byte at a time.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
           b"X-Padding: " + b"p" * 200 + b"\r\n\r\n{}")
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def trickle(gap_s: float, continues: int = 0, forever_continue: bool = False) -> Callable[[socket.socket,
                                                                                            threading.Event], None]:
    """A fault: ``continues`` 100 Continue answers (or endless ones), then the headers a byte per ``gap_s``."""
    def serve(conn: socket.socket, stop: threading.Event) -> None:
        for _ in range(continues):
            conn.sendall(CONTINUE)
        while forever_continue and not stop.wait(gap_s):
            conn.sendall(CONTINUE)
        for byte in HEADERS:
            if stop.wait(gap_s):
                return
            conn.sendall(bytes([byte]))
    return serve


def read_request(conn: socket.socket) -> bool:
    """Read one request's head and its ``Content-Length`` body; False when the client closed first.

    The body is read too: a socket closed with unread bytes in its receive buffer ends
    with a TCP reset rather than a FIN, and a reset that overtakes the response makes
    the client's read fail with ``ECONNRESET`` before it sees the answer.
    """
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.split(b":", 1)[0].strip().lower() == b"content-length"), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        body += chunk
    return True


@contextmanager
def raw_server(fault: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """A loopback server that reads each request (head and body) and then runs ``fault`` on the connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            if not read_request(conn):
                return
            try:
                fault(conn, stop)
            except OSError:
                pass  # the client gave up and closed: what the test wants

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        try:
            listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone does not)
        except OSError:
            pass
        listener.close()
        thread.join(timeout=5)
        assert not thread.is_alive()
