"""Print `uv pip install` arguments that give uv the package sources pip is configured with.

uv does not read pip's configuration; the Makefile installs with uv (much
faster, see benchmarks/install_uv_vs_pip.py) and passes these so both
installers see the same find-links, extra indexes and constraints.
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import subprocess
import sys

KEYS = {"find-links": "--find-links", "extra-index-url": "--extra-index-url", "index-url": "--index-url",
        "constraint": "--constraint"}


def pip_sources(python: str) -> list[str]:
    """``uv pip install`` flags from ``python -m pip config list`` (files and PIP_* variables)."""
    out = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         check=False).stdout
    args: list[str] = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        flag = KEYS.get(key.split(".", 1)[-1])
        if flag:
            args += [f"{flag}={v}" for v in value.strip("'\"").split() if f"{flag}={v}" not in args]
    return args


if __name__ == "__main__":
    print(" ".join(pip_sources(sys.argv[1] if len(sys.argv) > 1 else sys.executable)))
