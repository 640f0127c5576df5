"""A loopback-to-unix-socket relay, run inside a sandbox whose network is unshared.

Standalone on purpose: standard library only, no ``lab`` imports, so it runs
with nothing but an interpreter inside the sandbox. It listens on
``127.0.0.1:PORT`` and forwards every connection, bytes both ways, to the
gateway's unix socket bound into the sandbox::

    python3 -I -S relay.py 127.0.0.1:0 /run/lab/gateway.sock

Readiness: once listening it prints one line ``ready 127.0.0.1:<port>`` on
stdout (flushed), so the launcher reads a line instead of sleeping or
polling; ``PORT`` 0 lets the kernel choose. Usage errors exit 2, a port it
cannot bind exits 1, both with one line on stderr. It runs until killed
(the sandbox's pid namespace ends it with the run).

Why this and not socat (installed at ``/usr/bin/socat`` here): measured by
``benchmarks/relay_start.py`` (start until ready and a first connection
accepted, 2 loaded CPUs): relay.py ~30-60 ms median, which is the bare
interpreter's start-up (``python3 -I -S``) and nothing more; socat 1.7.4
~6-10 ms. socat is faster by tens of milliseconds, but it is one more system
package the sandbox must contain, and its only readiness signal is a
``-d -d`` log line whose wording varies by version. relay.py needs only the
interpreter the lab already has and says ``ready`` in one stable line; tens
of milliseconds are small beside an agent's own start-up (the reference
agent imports openai in ~0.7 s). Through the relay a call costs ~0.4-1 ms
more than straight to the gateway's TCP port (``benchmarks/gateway_overhead.py``).

Design: one thread per direction per connection (agents open a handful of
connections); when one side ends its writes the other side's write half is
shut down, so half-closed HTTP exchanges still complete.
"""

from __future__ import annotations

import socket
import sys
import threading

BUFFER_BYTES = 65536


def _pump(source: socket.socket, sink: socket.socket, done: threading.Semaphore) -> None:
    try:
        while True:
            data = source.recv(BUFFER_BYTES)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass  # either side went away; the other pump finishes on its own
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        done.release()


def _serve(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError as exc:
        sys.stderr.write(f"relay: cannot reach {socket_path}: {exc}\n")
        client.close()
        upstream.close()
        return
    done = threading.Semaphore(0)
    threading.Thread(target=_pump, args=(upstream, client, done), daemon=True).start()
    _pump(client, upstream, done)
    done.acquire()
    done.acquire()
    client.close()
    upstream.close()


def main(argv: list[str]) -> int:
    """Run the relay; returns an exit code (2: usage, 1: cannot listen)."""
    if len(argv) != 2 or ":" not in argv[0]:
        sys.stderr.write("usage: relay.py HOST:PORT UNIX_SOCKET_PATH\n")
        return 2
    host, _, port_text = argv[0].rpartition(":")
    if not port_text.isdigit():
        sys.stderr.write(f"relay: port must be a number, got {port_text!r}\n")
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, int(port_text)))
        listener.listen(64)
    except OSError as exc:
        sys.stderr.write(f"relay: cannot listen on {argv[0]}: {exc}\n")
        return 1
    bound_host, bound_port = listener.getsockname()[:2]
    sys.stdout.write(f"ready {bound_host}:{bound_port}\n")
    sys.stdout.flush()
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve, args=(client, argv[1]), daemon=True).start()


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
