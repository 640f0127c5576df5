"""Shared pieces of the benchmark scripts: run the real commands, time them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(argv: list[str], data_dir: Path, extra_env: dict[str, str] | None = None) -> float:
    """Run ``argv`` (``doit …`` / ``lab …``) from the checkout; return wall seconds. Fails loudly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    env["LAB_DATA_DIR"] = str(data_dir)
    env.update(extra_env or {})
    t0 = time.perf_counter()
    result = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                            text=True, check=False)
    elapsed = time.perf_counter() - t0
    if result.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return elapsed


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
