"""The first `make eval`'s install step: pip against uv for the same dependencies, side by side.

    python benchmarks/install_uv_vs_pip.py [--warm]

Creates two fresh virtual environments in a temporary directory and installs
the lab (``-e '.[dev]'``, as the Makefile does) once with pip and once with uv
(``uv pip install``, the same find-links, indexes and constraints pip is
configured with), each with its download cache disabled (a new machine) or,
with ``--warm``, enabled. Prints both wall times and their ratio. uv is taken
from PATH, or from a venv made for it here (``pip install uv``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from uv_args import pip_sources  # noqa: E402  (the Makefile's own source list)


def uv_binary(tmp: Path) -> str:
    on_path = shutil.which("uv")
    if on_path:
        return on_path
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "uv-venv")], check=True)
    subprocess.run([str(tmp / "uv-venv" / "bin" / "pip"), "install", "--quiet", "uv"], check=True)
    return str(tmp / "uv-venv" / "bin" / "uv")


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    warm = "--warm" in sys.argv
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        uv = uv_binary(tmp)
        for venv in ("pip-venv", "uv-venv-target"):
            subprocess.run([sys.executable, "-m", "venv", str(tmp / venv)], check=True)
        cache = [] if warm else ["--no-cache-dir"]
        pip_s = timed([str(tmp / "pip-venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", *cache,
                       "-e", ".[dev]"])
        sources = pip_sources(sys.executable)
        uv_s = timed([uv, "pip", "install", "--quiet", "--python", str(tmp / "uv-venv-target" / "bin" / "python"),
                      "--index-strategy", "unsafe-best-match", *([] if warm else ["--no-cache"]), *sources,
                      "-e", ".[dev]"])
    print(f"install -e '.[dev]' ({'warm' if warm else 'cold'} cache): pip {pip_s:.1f} s, uv {uv_s:.1f} s, "
          f"uv/pip = {uv_s / pip_s:.2f}")


if __name__ == "__main__":
    main()
