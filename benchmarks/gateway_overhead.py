"""Per-call latency the gateway adds on loopback (goal: <= 5 ms median, issue 12).

A stdlib keep-alive stub provider on 127.0.0.1 (its own process, TCP_NODELAY
as real servers) answers a small chat completion, as one JSON body or as an
SSE stream of 20 chunks. A client process (httpx, keep-alive) makes, each
round, one call straight to the stub, one through the gateway (TCP) and one
through relay.py to the gateway's unix socket, in an order that rotates
every round. The gateway runs in this process, as in the lab, whose main
thread just waits. Medians and their differences are printed side by side.

    .venv/bin/python benchmarks/gateway_overhead.py [calls per mode, default 200]
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from lab.gateway import Gateway, LiveUpstream, new_token  # noqa: E402

GOAL_MS = 5.0
CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "word "}, "finish_reason": None}]}
BODY = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "word " * 20},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}}).encode()
STREAM = b"".join([b"data: " + json.dumps(CHUNK).encode() + b"\n\n"] * 20
                  + [b'data: {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 20}}\n\n',
                     b"data: [DONE]\n\n"])


class StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers

    def setup(self) -> None:
        super().setup()
        # As real servers do: without it the body waits for the client's delayed ACK (~40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        payload, kind = (STREAM, "text/event-stream") if body.get("stream") else (BODY, "application/json")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


def timed(client: httpx.Client, url: str, headers: dict[str, str], stream: bool) -> float:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    start = time.perf_counter()
    with client.stream("POST", url + "/chat/completions", json=body, headers=headers) as response:
        for _ in response.iter_bytes():
            pass
        assert response.status_code == 200, response.status_code
    return (time.perf_counter() - start) * 1000


def run_stub() -> None:
    """``--stub``: serve until killed; print the port once listening."""
    stub = ThreadingHTTPServer(("127.0.0.1", 0), StubHandler)
    print(stub.server_address[1], flush=True)
    stub.serve_forever()


def run_client(calls: int, token: str, urls: list[str]) -> None:
    """``--client``: time the calls, print ``{mode: {stream: [ms, …]}}`` as JSON."""
    modes = list(zip(MODES, urls))
    auth = {"Authorization": f"Bearer {token}"}
    samples: dict[str, dict[str, list[float]]] = {name: {"false": [], "true": []} for name in MODES}
    with httpx.Client() as client:
        for stream in (False, True):
            for name, url in modes:  # warm-up: connections, first-call paths
                for _ in range(5):
                    timed(client, url, {} if name == "direct" else auth, stream)
            for i in range(calls):
                for name, url in modes[i % 3:] + modes[:i % 3]:
                    samples[name][str(stream).lower()].append(
                        timed(client, url, {} if name == "direct" else auth, stream))
    print(json.dumps(samples))


MODES = ("direct", "gateway", "relay+gateway")


def main() -> None:
    """Stub and client run in their own processes, as provider and agent do; this one holds the gateway."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    me = [sys.executable, str(Path(__file__).resolve())]
    stub = subprocess.Popen([*me, "--stub"], stdout=subprocess.PIPE, text=True)
    assert stub.stdout is not None
    stub_url = f"http://127.0.0.1:{stub.stdout.readline().strip()}/v1"
    token = new_token()
    socket_path = Path(tempfile.mkdtemp(prefix="gw-bench-")) / "gw.sock"
    gateway = Gateway(LiveUpstream(stub_url, "sk-bench"), token, socket_path=socket_path)
    gateway_url = str(gateway.start().base_url)
    relay = subprocess.Popen([sys.executable, "-I", "-S", str(ROOT / "lab/gateway/relay.py"), "127.0.0.1:0",
                              str(socket_path)], stdout=subprocess.PIPE, text=True)
    assert relay.stdout is not None
    relay_url = "http://" + relay.stdout.readline().split()[1] + "/v1"
    try:
        out = subprocess.run([*me, "--client", str(calls), token, stub_url, gateway_url, relay_url],
                             capture_output=True, text=True, check=True).stdout
    finally:
        for process in (relay, stub):
            process.kill()
            process.wait()
        gateway.stop()
    samples = json.loads(out)
    for stream in ("false", "true"):
        print(f"{'streamed (20 SSE chunks)' if stream == 'true' else 'not streamed'}: "
              f"{calls} calls per mode, interleaved")
        direct = statistics.median(samples["direct"][stream])
        for name in MODES:
            median = statistics.median(samples[name][stream])
            extra = "" if name == "direct" else f"   overhead {median - direct:5.2f} ms (goal <= {GOAL_MS:.0f} ms)"
            print(f"  {name:<14} median {median:6.2f} ms{extra}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stub"]:
        run_stub()
    elif sys.argv[1:2] == ["--client"]:
        run_client(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
    else:
        main()
