"""Report build cost over 10k and 100k synthetic run records, measured side by side.

Prints, per size: wall time and tracemalloc peak of ``build_report``, of each
writer (report.md, junit.xml, index.html streamed as ``write_report`` does)
and of ``write_report`` as a whole, then the 100k / 10k ratios (a linear
build gives ratios near 10). tracemalloc slows Python down about twofold;
compare the columns with each other, not with a stopwatch. A plain script,
not a test:

    .venv/bin/python benchmarks/report_build.py [N …]      # default 10000 100000
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.report import build_report, render_junit, render_markdown, write_report
from lab.report.html import iter_html

TASKS = 50
SHA = "0" * 64


def synthetic_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` run records over ``TASKS`` tasks with mixed statuses, usage and three verifiers each."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        status = rng.choices(["pass", "fail", "budget_exceeded", "error"], [70, 20, 5, 5])[0]
        verdicts = [{"id": f"v{j}", "kind": "command", "weight": 1.0, "detail": "exit code 0 as expected",
                     "status": "pass" if status == "pass" or rng.random() < 0.5 else "fail",
                     "diagnostics": {"exitCode": 0, "stderrTail": ""}} for j in range(3)]
        tokens_in, tokens_out = rng.randint(500, 50_000), rng.randint(50, 5_000)
        records.append({
            "schemaVersion": 1, "suiteId": "bench", "suiteVersion": "1.0.0", "suiteDigest": SHA,
            "taskId": f"task-{i % TASKS:03d}", "repetition": i // TASKS, "baseSeed": 0, "seed": i // TASKS,
            "configHash": SHA, "harnessDigest": SHA, "mode": "live", "provider": "openai", "model": "m",
            "status": status, "claim": rng.choice(["success", "gave_up", "none"]), "stopReason": "answered",
            "budgetExceeded": None, "finalMessage": "DONE", "verifiers": [] if status == "error" else verdicts,
            "score": None if status == "error" else sum(v["status"] == "pass" for v in verdicts) / 3,
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out,
                      "cachedInputTokens": rng.randint(0, tokens_in), "cachedPartial": False},
            "compactionUsage": None, "turns": 4, "toolCalls": 3, "compactions": 0,
            "events": [{"seq": s, "type": "tool_call", "turn": s, "id": f"call_{s}_0", "tool": "read_file",
                        "arguments": {"path": "a.py"}, "effect": "read", "outcome": "ok", "error": None}
                       for s in range(6)],
            "incidents": [], "error": {"kind": "provider", "message": "503"} if status == "error" else None,
            "divergence": None, "startedAt": "2030-01-01T00:00:00.000Z", "finishedAt": "2030-01-01T00:00:01.000Z",
            "wallMs": rng.randint(1_000, 60_000), "workspace": None})
    rng.shuffle(records)
    return records


def measure(step: Callable[[], Any]) -> tuple[float, float]:
    """(seconds, peak MiB allocated during the step)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    step()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak


def bench(n: int) -> dict[str, tuple[float, float]]:
    records = synthetic_records(n)
    header = {"runId": "bench.000000000000.k1.s0", "suiteId": "bench", "suiteVersion": "1.0.0",
              "suiteDigest": SHA, "harnessVersion": "0.1.0", "harnessDigest": SHA, "configHash": SHA,
              "provider": "openai", "model": "m", "mode": "live", "k": max(1, n // TASKS), "seed": 0,
              "rates": {"input": 1.0, "output": 4.0}}
    doc = build_report(header, records)
    with tempfile.TemporaryDirectory() as tmp:
        return {"build_report": measure(lambda: build_report(header, records)),
                "report.md": measure(lambda: render_markdown(doc)),
                "junit.xml": measure(lambda: render_junit(doc, records)),
                "index.html": measure(lambda: _drain(iter_html(doc, records))),
                "write_report": measure(lambda: write_report(Path(tmp) / "report", doc, records))}


def _drain(chunks: Any) -> int:
    """Consume a chunk stream as a file write would (length only)."""
    return sum(len(chunk) for chunk in chunks)


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [10_000, 100_000]
    results = {n: bench(n) for n in sizes}
    print(f"{'step':<14}" + "".join(f"{f'{n} s':>12}{f'{n} MiB':>12}" for n in sizes))
    for step in results[sizes[0]]:
        print(f"{step:<14}" + "".join(f"{results[n][step][0]:>12.3f}{results[n][step][1]:>12.1f}" for n in sizes))
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        print(f"\nratios {large} / {small} (records x{large / small:g}):")
        for step in results[small]:
            (t0, m0), (t1, m1) = results[small][step], results[large][step]
            print(f"  {step:<14} time x{t1 / t0:.1f}   peak memory x{m1 / m0:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
