"""Per-run overhead of a replayed run beyond its verifier commands.

Replays every bundled cassette in-process (no doit, no subprocess for the
lab itself) and reports, per run, wall time minus the time its command
verifiers took. The budget is about 25 ms per replayed run.

    .venv/bin/python benchmarks/replay_overhead.py [repetitions]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    os.environ["LAB_DATA_DIR"] = tempfile.mkdtemp()
    from lab.build.graph import prepare
    from lab.execute.plan import RunSpec
    from lab.execute.run import execute_run

    overheads, totals = [], []
    for suite in ("smoke-coding", "core", "holdout", "tool-sequences"):
        prep = prepare([f"suite={suite}", "mode=replay"])
        for task in prep.ctx.suite.tasks:
            for i in range(reps):
                t0 = time.perf_counter()
                record = execute_run(prep.ctx, RunSpec(task.id, i, 0))
                wall_ms = (time.perf_counter() - t0) * 1000
                verifier_ms = sum(v.get("diagnostics", {}).get("durationMs", 0) for v in record["verifiers"])
                tool_ms = sum(e.get("durationMs", 0) for e in record["events"] if e.get("type") == "tool_call")
                assert record["status"] == "pass", (suite, task.id, record["error"])
                overheads.append(wall_ms - verifier_ms - tool_ms)
                totals.append(wall_ms)
    print(f"replayed runs: {len(totals)}")
    print(f"wall per run:            median {statistics.median(totals):7.1f} ms")
    print(f"beyond verifiers/tools:  median {statistics.median(overheads):7.1f} ms, "
          f"p90 {sorted(overheads)[int(len(overheads) * 0.9)]:7.1f} ms   (budget ~25 ms)")


if __name__ == "__main__":
    main()
