"""jobs scaling: 40 live runs against a local provider stub with 200 ms latency, jobs=1 vs jobs=20.

The stub is an OpenAI-compatible server on 127.0.0.1 that waits 200 ms and
answers "DONE" without tool calls, so each run is one model call plus its
verifiers (suite `core`, 5 tasks × k=8 = 40 runs; the verifiers fail, which
does not matter here). Prints both wall times and the speed-up. The streamed
variant with two calls per run, and the lab's CPU per run, is row 4 of
``benchmarks/table.py``.

    .venv/bin/python benchmarks/jobs_scaling.py
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import run

LATENCY_S = 0.2


class Stub(BaseHTTPRequestHandler):
    def setup(self) -> None:
        super().setup()
        # http.server writes headers and body apart: without TCP_NODELAY the body waits for the
        # client's delayed ACK (~40 ms), which no production server adds to a model call.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length", "0")))
        time.sleep(LATENCY_S)  # the simulated model latency is the point of this benchmark
        body = json.dumps({"id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "DONE: nothing"}}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    argv = ["doit", "eval", "suite=core", "k=8", "provider=openai", "provider.stream=false",
            f"provider.base_url={base}", "provider.api_key_env=LAB_BENCH_KEY"]
    env = {"LAB_BENCH_KEY": "bench-key-not-secret"}
    times = {}
    for jobs in (1, 20):
        with tempfile.TemporaryDirectory() as tmp:
            times[jobs] = run([*argv, f"jobs={jobs}"], Path(tmp), env)
    server.shutdown()
    print(f"40 runs, {int(LATENCY_S * 1000)} ms per model call")
    print(f"jobs=1:  {times[1]:.2f} s")
    print(f"jobs=20: {times[20]:.2f} s")
    print(f"speed-up jobs=20 / jobs=1: {times[1] / times[20]:.1f}x")


if __name__ == "__main__":
    main()
