"""Start-up of the sandbox relay until it is ready to accept: relay.py beside socat.

Each sample starts the relay listening on 127.0.0.1:0 towards a unix socket
and stops the clock when it is ready *and* a first TCP connection succeeds:
relay.py says so with its ``ready HOST:PORT`` line; socat (``-d -d``) with
its ``listening on`` log line (its port read from that line). A third row
times the bare interpreter (``python3 -I -S -c "import socket, threading"``),
the floor for relay.py. Starts alternate; medians are printed side by side.

    .venv/bin/python benchmarks/relay_start.py [starts per relay, default 30]
"""

from __future__ import annotations

import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RELAY = Path(__file__).resolve().parent.parent / "lab/gateway/relay.py"


def start_relay_py(socket_path: str) -> float:
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-I", "-S", str(RELAY), "127.0.0.1:0", socket_path],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    port = int(process.stdout.readline().rsplit(":", 1)[1])
    return _connected(start, port, process)


def start_socat(socket_path: str) -> float:
    start = time.perf_counter()
    process = subprocess.Popen(["socat", "-d", "-d", "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,fork",
                                f"UNIX-CONNECT:{socket_path}"], stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        match = re.search(r"listening on .*:(\d+)\s*$", line)
        if match:
            return _connected(start, int(match.group(1)), process)
    raise SystemExit(f"socat ended without a 'listening on' line (exit {process.wait()})")


def start_interpreter_only(socket_path: str) -> float:
    """The floor for relay.py: the interpreter starting and importing what the relay imports."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-S", "-c", "import socket, threading"], check=True)
    return (time.perf_counter() - start) * 1000


def _connected(start: float, port: int, process: subprocess.Popen[str]) -> float:
    with socket.create_connection(("127.0.0.1", port)):
        elapsed = (time.perf_counter() - start) * 1000
    process.kill()
    process.wait()
    return elapsed


def main() -> None:
    starts = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    socket_path = str(Path(tempfile.mkdtemp(prefix="relay-bench-")) / "gw.sock")
    runs = {"relay.py (python3 -I -S)": start_relay_py, "  of which the interpreter": start_interpreter_only}
    if shutil.which("socat"):
        runs["socat -d -d"] = start_socat
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(starts):
        for name, run in runs.items():
            samples[name].append(run(socket_path))
    print(f"relay start until ready and first connection accepted, {starts} starts each, alternating")
    for name, values in samples.items():
        print(f"  {name:<26} median {statistics.median(values):6.1f} ms   max {max(values):6.1f} ms")


if __name__ == "__main__":
    main()
