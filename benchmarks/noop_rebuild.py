"""No-op rebuild: a second identical `doit eval` against `doit list` (issue: X4 fixed cost).

A second identical eval must execute nothing: its cost is composing the
configuration, loading the suite, planning and asking doit's database. The
ratio to `doit list` (import + load tasks, nothing composed) shows what that
costs above doit's own start-up.

    .venv/bin/python benchmarks/noop_rebuild.py [repeats]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _common import median, run


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        eval_argv = ["doit", "eval", "suite=smoke-coding", "mode=replay"]
        first = run(eval_argv, data)
        noop = median([run(eval_argv, data) for _ in range(repeats)])
        listing = median([run(["doit", "list"], data) for _ in range(repeats)])
        lab_list = median([run(["lab", "list"], data) for _ in range(repeats)])
    print(f"first eval (7 replayed runs):   {first:.3f} s")
    print(f"second identical eval (no-op):  {noop:.3f} s   (median of {repeats})")
    print(f"doit list:                      {listing:.3f} s")
    print(f"lab list:                       {lab_list:.3f} s")
    print(f"ratio no-op eval / doit list:   {noop / listing:.2f}")


if __name__ == "__main__":
    main()
