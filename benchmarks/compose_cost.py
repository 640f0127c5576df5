"""CPU of one configuration compose in a process that has composed before (what every command and
most config tests pay), split into Hydra's compose and the lab's own checks around it.

Rows (CPU seconds of this process, ``time.process_time``, median of the repetitions, in ms):

- ``compose_config`` of the same override list again, and of a new list each time (``k=<n>``);
- ``_compose``: Hydra's compose and the plain-data conversion alone (the same new lists);
- the lab's checks alone (variant file, overrides, data): ``compose_config`` with Hydra's answer
  given (``_compose`` replaced by the result it gave for that list), so other load on the machine
  does not drown a few milliseconds;
- ``compose_cached`` on a miss and on a hit (a temporary cache directory).

    .venv/bin/python benchmarks/compose_cost.py [repeats]     # default 15
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import ROOT

sys.path.insert(0, str(ROOT))

import lab.config.compose as compose  # noqa: E402
from lab.config.cache import compose_cached  # noqa: E402
from lab.config.compose import _compose, compose_config  # noqa: E402
from lab.paths import CONF_DIR  # noqa: E402


def cpu_ms(work: Callable[[int], object], repeats: int) -> float:
    """Median CPU milliseconds of ``work(i)`` over ``repeats`` calls."""
    times = []
    for i in range(repeats):
        start = time.process_time()
        work(i)
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    compose_config([])  # imports and Hydra's one-time set-up are not part of a compose
    cache = Path(tempfile.mkdtemp(prefix="compose-cost-"))
    same = cpu_ms(lambda i: compose_config(["suite=core"]), repeats)
    new = cpu_ms(lambda i: compose_config([f"k={i + 2}"]), repeats)
    hydra = cpu_ms(lambda i: _compose([f"k={i + 2}"], CONF_DIR), repeats)
    answers = {(f"k={i + 2}",): _compose([f"k={i + 2}"], CONF_DIR) for i in range(repeats)}
    compose._compose = lambda overrides, conf_dir: answers[tuple(overrides)]  # type: ignore[assignment]
    checks = cpu_ms(lambda i: compose_config([f"k={i + 2}"]), repeats)
    compose._compose = _compose  # type: ignore[assignment]
    miss = cpu_ms(lambda i: compose_cached([f"seed={i + 1}"], cache=cache), repeats)
    hit = cpu_ms(lambda i: compose_cached([f"seed={i + 1}"], cache=cache), repeats)
    print(f"compose_config, same overrides    {same:7.1f} ms CPU")
    print(f"compose_config, new overrides     {new:7.1f} ms CPU")
    print(f"  of which Hydra (_compose)       {hydra:7.1f} ms CPU")
    print(f"  the lab's checks alone          {checks:7.2f} ms CPU")
    print(f"compose_cached, miss              {miss:7.1f} ms CPU")
    print(f"compose_cached, hit               {hit:7.1f} ms CPU")


if __name__ == "__main__":
    main()
