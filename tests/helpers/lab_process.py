"""Run the real `doit` and `lab` commands in a subprocess against the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run_cmd(argv: list[str], data_dir: Path, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (``doit …`` or ``lab …``) from the checkout with its own run store."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    env["LAB_DATA_DIR"] = str(data_dir)
    exe = str(BIN / argv[0])
    return subprocess.run([exe, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout_s, check=False)
