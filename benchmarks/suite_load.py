"""Suite loading cost at 2,000 and 20,000 tasks (and verifiers), measured side by side.

Writes synthetic suites to a temp dir (each task with its own fixture
directory holding one file, and three verifiers; every task sharing one
fixture; and one task holding N verifiers), then times ``load_suite`` on
each, interleaved over ``--repeat`` rounds, and prints the median wall and
CPU time (CPU time is less disturbed by other work on the machine) with the
load average, and the ratios between sizes: linear loading gives ratios
near 10. The target is 20,000 tasks (own fixtures) in at most 2 s. The
first load of a process also imports the validators and compiles the schema;
that one-time cost is printed apart. A plain script, not a test:

    .venv/bin/python benchmarks/suite_load.py [--repeat R] [N …]   # default R=5, N=2000 20000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.suites.load import load_suite

KINDS = ("one fixture", "own fixtures", "verifiers in one task")


def verifier(j: int) -> dict[str, Any]:
    return {"id": f"v{j}", "kind": "file-contains", "path": "a.txt", "text": "x"}


def task(i: int, verifiers: int = 3, fixture: str | None = None) -> dict[str, Any]:
    return {"id": f"task-{i}", "prompt": f"Do thing {i}.", "fixture": fixture or f"fixtures/t{i}",
            "budget": {"maxTurns": 5, "maxWallMs": 60000}, "policy": {"mode": "auto", "allow": ["write"]},
            "verifiers": [verifier(j) for j in range(verifiers)], "tags": ["bench"]}


def write_suite(root: Path, tasks: list[dict[str, Any]]) -> Path:
    for task_doc in tasks:
        fixture = root / task_doc["fixture"]
        fixture.mkdir(parents=True, exist_ok=True)
        (fixture / "a.txt").write_text("x\n")
    doc = {"schemaVersion": 1, "suiteId": "bench", "suiteVersion": "1.0.0", "description": "bench",
           "tasks": tasks}
    (root / "suite.json").write_text(json.dumps(doc))
    return root


def timed(path: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``load_suite``."""
    wall, cpu = time.perf_counter(), time.process_time()
    suite = load_suite(path)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert suite.tasks
    return wall, cpu


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(sizes: list[int], repeat: int) -> None:
    print(f"load average {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        first = timed(write_suite(Path(tmp) / "warm", [task(i) for i in range(100)]))
        print(f"first load of the process (100 tasks; imports, compiled schema): {first[0]:.2f} s "
              f"(cpu {first[1]:.2f} s)")
        suites = {(n, kind): write_suite(Path(tmp) / f"{n}-{k}", tasks)
                  for n in sizes
                  for k, (kind, tasks) in enumerate([
                      (KINDS[0], [task(i, fixture="fixtures/t0") for i in range(n)]),
                      (KINDS[1], [task(i) for i in range(n)]),
                      (KINDS[2], [task(0, verifiers=n)])])}
        times: dict[tuple[int, str], list[tuple[float, float]]] = {key: [] for key in suites}
        for _ in range(repeat):  # interleaved, so a busy moment hits every case alike
            for key, path in suites.items():
                times[key].append(timed(path))
    medians = {key: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for key, runs in times.items()}
    for n in sizes:
        print(f"{n:>7}: " + "   ".join(f"{kind}: {medians[n, kind][0]:5.2f} s (cpu {medians[n, kind][1]:5.2f})"
                                        for kind in KINDS))
    small, large = min(sizes), max(sizes)
    if small != large:
        ratios = ", ".join(f"{medians[large, kind][1] / medians[small, kind][1]:.1f}" for kind in KINDS)
        print(f"cpu ratios {large}/{small}: {ratios} (linear: {large / small:.0f})")
    print(f"medians of {repeat}; load average {load_average()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("sizes", nargs="*", type=int, default=[2000, 20000], help="task / verifier counts")
    args = parser.parse_args()
    main(args.sizes, args.repeat)
