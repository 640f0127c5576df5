"""Suite loading cost at 2,000 and 20,000 tasks (and verifiers), measured side by side.

Writes synthetic suites to a temp dir (each task with its own fixture
directory and three verifiers; and one task holding N verifiers), times
``load_suite`` on each and prints the ratios: linear validation gives ratios
near 10. The target is 20,000 tasks in at most 2 s. A plain script, not a
test:

    .venv/bin/python benchmarks/suite_load.py [N …]      # default 2000 20000
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.suites.load import load_suite


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


def timed(path: Path) -> float:
    t0 = time.perf_counter()
    suite = load_suite(path)
    elapsed = time.perf_counter() - t0
    assert suite.tasks
    return elapsed


def main(sizes: list[int]) -> None:
    results: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        load_suite(write_suite(Path(tmp) / "warm", [task(0)]))  # imports
        for n in sizes:
            shared = write_suite(Path(tmp) / f"shared-{n}", [task(i, fixture="fixtures/t0") for i in range(n)])
            own = write_suite(Path(tmp) / f"own-{n}", [task(i) for i in range(n)])
            many_verifiers = write_suite(Path(tmp) / f"verifiers-{n}", [task(0, verifiers=n)])
            results[n] = (timed(shared), timed(own), timed(many_verifiers))
            print(f"{n:>7} tasks, one fixture: {results[n][0]:6.2f} s   own fixtures: {results[n][1]:6.2f} s   "
                  f"{n} verifiers in one task: {results[n][2]:6.2f} s")
    small, large = min(sizes), max(sizes)
    if small != large:
        ratios = ", ".join(f"{results[large][i] / results[small][i]:.1f}" for i in range(3))
        print(f"ratios {large}/{small}: {ratios} (linear: {large / small:.0f})")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2000, 20000])
