"""A loopback OpenAI-compatible endpoint that answers every chat completion with ``DONE: nothing``.

After ``latency_s`` (the simulated model latency), counting the calls in
flight: ``calls`` in all, ``now`` in flight, ``peak`` the most at once. Used
by the provider-cap tests and by the benchmarks that time runs against a
fixed latency::

    with done_stub(latency_s=0.5) as (url, stub):
        ...  # provider.base_url=url
        assert stub.peak == 1
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DONE = json.dumps({"id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "DONE: nothing"}}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()


class DoneStub(BaseHTTPRequestHandler):
    """The handler; :func:`done_stub` makes a subclass of its own per server (its own counters)."""

    latency_s = 0.0
    lock = threading.Lock()
    now = peak = calls = 0

    def setup(self) -> None:
        super().setup()
        # http.server writes headers and body apart: without TCP_NODELAY the body waits for the
        # client's delayed ACK (~40 ms), which no production server adds to a model call.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length", "0")))
        cls = type(self)
        with cls.lock:
            cls.now += 1
            cls.calls += 1
            cls.peak = max(cls.peak, cls.now)
        threading.Event().wait(cls.latency_s)  # the model's latency: calls overlap unless something caps them
        with cls.lock:
            cls.now -= 1
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(DONE)))
        self.end_headers()
        self.wfile.write(DONE)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def done_stub(latency_s: float) -> Iterator[tuple[str, type[DoneStub]]]:
    """A running stub on 127.0.0.1: its base URL (``…/v1``) and its handler class (the counters)."""
    handler = type("Stub", (DoneStub,), {"latency_s": latency_s, "lock": threading.Lock(), "now": 0, "peak": 0,
                                         "calls": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()
