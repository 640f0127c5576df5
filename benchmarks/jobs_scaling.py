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

import sys
import tempfile
from pathlib import Path

from _common import run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.helpers.done_stub import done_stub  # noqa: E402 (the stub provider, shared with the tests)

LATENCY_S = 0.2


def main() -> None:
    times = {}
    with done_stub(LATENCY_S) as (base, _):
        argv = ["doit", "eval", "suite=core", "k=8", "provider=openai", "provider.stream=false",
                f"provider.base_url={base}", "provider.api_key_env=LAB_BENCH_KEY"]
        env = {"LAB_BENCH_KEY": "bench-key-not-secret"}
        for jobs in (1, 20):
            with tempfile.TemporaryDirectory() as tmp:
                times[jobs] = run([*argv, f"jobs={jobs}"], Path(tmp), env)
    print(f"40 runs, {int(LATENCY_S * 1000)} ms per model call")
    print(f"jobs=1:  {times[1]:.2f} s")
    print(f"jobs=20: {times[20]:.2f} s")
    print(f"speed-up jobs=20 / jobs=1: {times[1] / times[20]:.1f}x")


if __name__ == "__main__":
    main()
