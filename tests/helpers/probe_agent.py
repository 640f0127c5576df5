"""A command agent for tests: standard library only, talks chat completions to the gateway.

Copied into a task copy and started as ``python3 probe_agent.py MODE`` with
the lab's OPENAI_BASE_URL / OPENAI_API_KEY. Modes:

* ``fresh``: one call whose body carries a fresh UUID and timestamp in the
  user message and in ``metadata`` (volatile: normalisation must ignore them),
  and ``temperature`` from ``$PROBE_TEMPERATURE`` (default 0; not ignored).
* ``leak``: write the environment and every readable ``/proc/*/environ`` to
  ``probe-out.txt`` in the working directory and to stdout, then one call.
* ``loop``: write its pid to ``probe-pids.txt``, then call the gateway forever.
* ``hang``: one call, then ignore SIGTERM, start a child that ignores it too,
  write both pids to ``probe-pids.txt`` and sleep forever.
* ``abandon``: one streamed call whose prompt says ``slow``, hanging up after
  its first event (``SlowStub`` streams it slowly), then one call as ``fresh``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path


def call(body: dict) -> dict:
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def hang_up_mid_stream(body: dict) -> None:
    """A streamed call, read up to its first event; leaving ``with`` closes the connection mid-stream."""
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        next(line for line in response if line.startswith(b"data:"))


def fresh_body() -> dict:
    now = datetime.now(timezone.utc).isoformat()
    return {"model": sys.argv[2], "temperature": float(os.environ.get("PROBE_TEMPERATURE", "0")),
            "metadata": {"trace": str(uuid.uuid4())},
            "messages": [{"role": "user", "content": f"Task at {now}, request {uuid.uuid4()}, home {os.environ['HOME']}: say done."}]}


def leak() -> None:
    found = [f"env {k}={v}" for k, v in os.environ.items()]
    for entry in Path("/proc").iterdir():
        try:
            found.append(f"{entry}/environ " + (entry / "environ").read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
    text = "\n".join(found)
    Path("probe-out.txt").write_text(text)
    print(text)


def main() -> int:
    mode = sys.argv[1]
    if mode == "leak":
        leak()
    if mode == "abandon":
        body = fresh_body()
        hang_up_mid_stream({**body, "stream": True, "messages": [{"role": "user", "content": "slow: say done."}]})
    if mode == "loop":
        Path("probe-pids.txt").write_text(str(os.getpid()))
        while True:
            call(fresh_body())
    call(fresh_body())
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
        Path("probe-pids.txt").write_text(f"{os.getpid()} {child.pid}")
        time.sleep(3600)
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
