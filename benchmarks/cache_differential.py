"""Differential check of the lab's memos, longer than the test suite's (SPEC X10).

Applies random sequences of 1-3 edits (fixture, verifier, suite.json, conf,
environment variable, lab module, cassette, same-size rewrites with the
mtime put back, renames, symlink retargets, junk a run's copy leaves out,
Hydra plugin dirs) to a copy of the lab, and after each runs the warm
command, the same command without caches (``LAB_NO_CACHE=1``) in a copy of
its data dir, and a cold build in a fresh data dir
(``tests/helpers/cache_differential.py``). Prints each scenario, then the
scenarios tried and the mismatches found (a mismatch: the warm command
executed other runs than the cache-free one, or its report differs from the
cold build's). Exit 1 when any mismatch was found.

    .venv/bin/python benchmarks/cache_differential.py [scenarios] [seed]   # default 20 scenarios, seed 0
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.cache_differential import EDITS, Lab  # noqa: E402


def main() -> int:
    scenarios = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rnd = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    where = Path(tempfile.mkdtemp(prefix="lab-cache-differential-"))
    mismatches = 0
    started = time.monotonic()
    try:
        lab = Lab.make(where)
        problems = lab.check()
        print(f"first command: {'ok' if not problems else problems}", flush=True)
        mismatches += bool(problems)
        for number in range(1, scenarios + 1):
            names = [rnd.choice(sorted(EDITS)) for _ in range(rnd.randint(1, 3))]
            done = [f"{name}: {EDITS[name](lab, rnd)}" for name in names]
            problems = lab.check()
            mismatches += bool(problems)
            print(f"{number:3d} {'ok      ' if not problems else 'MISMATCH'} {'; '.join(done)}", flush=True)
            for problem in problems:
                print(f"      {problem}", flush=True)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"scenarios tried: {scenarios}; mismatches: {mismatches}; commands: {3 * (scenarios + 1)}; "
          f"{time.monotonic() - started:.0f} s")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
