"""Live runs share one connection pool per process (lab.providers.client.shared_client).

Each run builds its own provider, as ``lab.execute.run`` does; the calls of
successive runs, and of runs in parallel threads, go through one pooled
client on a real keep-alive HTTP/1.1 server on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lab.providers.client import close_clients, shared_client
from lab.providers.openai_compat import OpenAICompatProvider

ANSWER = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "DONE"}}],
          "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _sse() -> bytes:
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": "DONE"}, "finish_reason": "stop"}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"


class KeepAlive(BaseHTTPRequestHandler):
    """Answers every POST on a keep-alive connection: JSON, or SSE when the body asks to stream.

    ``drop_after_answer`` closes the connection right after the answer (a server
    whose keep-alive timeout has passed); ``barrier`` makes calls wait for each other;
    ``hold`` keeps a chunked stream open after ``[DONE]`` until it is set.
    """

    protocol_version = "HTTP/1.1"
    peers: list[tuple[str, int]] = []
    drop_after_answer = False
    barrier: threading.Barrier | None = None
    hold: threading.Event | None = None

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        type(self).peers.append(self.client_address)
        if type(self).barrier is not None:
            type(self).barrier.wait(timeout=30)
        body, kind = (_sse(), "text/event-stream") if request.get("stream") else \
            (json.dumps(ANSWER).encode(), "application/json")
        if type(self).hold is not None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
            self.wfile.flush()
            type(self).hold.wait(timeout=60)  # the stream stays open, the body never ends
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if type(self).drop_after_answer:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def keepalive_url() -> Iterator[str]:
    KeepAlive.peers, KeepAlive.drop_after_answer, KeepAlive.barrier, KeepAlive.hold = [], False, None, None
    server = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    close_clients()  # no connection of an earlier test is reused
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    if KeepAlive.hold is not None:
        KeepAlive.hold.set()
    close_clients()
    server.shutdown()
    server.server_close()


def _provider(url: str, *, stream: bool = False) -> OpenAICompatProvider:
    return OpenAICompatProvider(base_url=url, api_key_env="K", stream=stream, timeout_s=30.0, max_retries=0,
                                env={"K": "sk-pool-test-key"})


@pytest.mark.parametrize("stream", [False, True])
def test_calls_of_successive_runs_share_one_connection(keepalive_url: str, stream: bool) -> None:
    for _ in range(3):
        exchange = _provider(keepalive_url, stream=stream).send(REQUEST)
        assert exchange["status"] == 200
        assert exchange["type"] == ("sse" if stream else "json")
    assert len(KeepAlive.peers) == 3
    assert len(set(KeepAlive.peers)) == 1, KeepAlive.peers


def test_runs_in_parallel_threads_call_at_once_through_the_pool(keepalive_url: str) -> None:
    threads = 8
    KeepAlive.barrier = threading.Barrier(threads)  # every call waits until all 8 are in the server
    results: list[Any] = []

    def run() -> None:
        results.append(_provider(keepalive_url).send(REQUEST)["status"])

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert results == [200] * threads
    assert len(set(KeepAlive.peers)) == threads
    KeepAlive.barrier = None
    _provider(keepalive_url).send(REQUEST)
    assert KeepAlive.peers[-1] in set(KeepAlive.peers[:threads])  # an idle pooled connection, reused


def test_a_connection_the_server_dropped_is_not_reused(keepalive_url: str) -> None:
    KeepAlive.drop_after_answer = True
    for _ in range(3):
        assert _provider(keepalive_url).send(REQUEST)["status"] == 200
    assert len(set(KeepAlive.peers)) == 3


def test_clients_differ_by_ca_files_and_proxy_and_close_at_will(keepalive_url: str) -> None:
    env: dict[str, str] = {}
    first = shared_client(env, keepalive_url)
    assert shared_client({"K": "other"}, keepalive_url) is first  # the key is not part of the setup
    assert shared_client({"https_proxy": "http://proxy.invalid:3128"}, "https://api.example.com/v1") is not first
    _provider(keepalive_url).send(REQUEST)
    close_clients()
    assert first.is_closed
    assert _provider(keepalive_url).send(REQUEST)["status"] == 200  # a new client, a new connection
    assert len(set(KeepAlive.peers)) == 2


def test_a_stream_held_open_after_done_is_complete_and_its_connection_dropped(keepalive_url: str) -> None:
    KeepAlive.hold = threading.Event()
    exchange = _provider(keepalive_url, stream=True).send(REQUEST)  # timeout_s=30: waiting would time out
    assert exchange["type"] == "sse"
    assert exchange["events"][-1] == "[DONE]"
    KeepAlive.hold.set()
    KeepAlive.hold = None
    assert _provider(keepalive_url, stream=True).send(REQUEST)["status"] == 200
    assert len(set(KeepAlive.peers)) == 2  # the held connection was not reused


def test_the_providers_do_not_load_the_httpx_command_line_client() -> None:
    code = ("import sys, lab.providers.openai_compat, httpx; "
            "print(sorted(m for m in ('httpx._main', 'click', 'rich', 'pygments') if sys.modules.get(m)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
