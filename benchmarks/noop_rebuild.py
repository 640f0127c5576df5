"""No-op rebuild: a second identical `doit eval` against `doit list` (issue 16: the fixed cost of a command).

A second identical eval must execute nothing: its cost is finding the
composed configuration, the loaded suite and every run record up to date,
building the doit graph and printing the summary. `doit list` (doit's
start-up and the lab's task creators, nothing composed) is the yardstick.

Two rows, each a whole process timed from outside (wall clock, and the CPU
time the kernel reports for the child, which is less sensitive to other
load), interleaved with `doit list` over the repetitions, medians printed:

- `doit eval suite=smoke-coding mode=replay` (7 runs), goal <= 1.5x;
- the same with k=29 (203 runs), goal <= 1.5x and <= 1 ms per run for
  creating and checking the doit tasks: (k=29 - k=1) / (203 - 7).

Each row has a fresh data dir of its own, so each timed eval is the same
command as the one before it in that data dir; the evals are run once first
(203 replayed runs: about a minute), then once more to warm up (what a
command remembers is checked by content, lab.stamps).
PYTHONDONTWRITEBYTECODE is removed from the children's environment so that
every command runs from compiled bytecode, as a user's would.

    .venv/bin/python benchmarks/noop_rebuild.py [repeats]     # default 7
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BIN, ROOT

SMALL = ["doit", "eval", "suite=smoke-coding", "mode=replay"]
LARGE = [*SMALL, "k=29"]
LISTING = ["doit", "list"]
GOAL_RATIO = 1.5
GOAL_MS_PER_RUN = 1.0


def timed(argv: list[str], data_dir: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child: user + system) of one whole command; fails loudly on exit > 1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["LAB_DATA_DIR"] = str(data_dir)
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(BIN / argv[0]), *argv[1:]], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime


def planned_runs(k: int) -> int:
    return 7 * k  # smoke-coding has 7 tasks


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as tmp:
        small_data, large_data = Path(tmp) / "small", Path(tmp) / "large"
        first_small, first_large = timed(SMALL, small_data)[0], timed(LARGE, large_data)[0]
        for argv, data in ((SMALL, small_data), (LARGE, large_data), (LISTING, small_data)):  # warm-up
            timed(argv, data)
        samples: dict[str, list[tuple[float, float]]] = {"small": [], "large": [], "list": []}
        for _ in range(repeats):
            samples["list"].append(timed(LISTING, small_data))
            samples["small"].append(timed(SMALL, small_data))
            samples["large"].append(timed(LARGE, large_data))
    med = {name: (statistics.median(s[0] for s in runs), statistics.median(s[1] for s in runs))
           for name, runs in samples.items()}
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs; medians of {repeats}, "
          f"interleaved; first evals: {first_small:.2f} s (7 runs), {first_large:.2f} s (203 runs)")
    print(f"{'command':<52}{'wall s':>9}{'CPU s':>9}{'wall x':>9}{'CPU x':>9}   goal")
    list_wall, list_cpu = med["list"]
    print(f"{'doit list':<52}{list_wall:>9.3f}{list_cpu:>9.3f}{'1.00':>9}{'1.00':>9}")
    for name, argv in (("small", SMALL), ("large", LARGE)):
        wall, cpu = med[name]
        label = " ".join(argv[1:]) + " (no-op)"
        print(f"{label:<52}{wall:>9.3f}{cpu:>9.3f}{wall / list_wall:>9.2f}{cpu / list_cpu:>9.2f}"
              f"   <= {GOAL_RATIO}x")
    extra = planned_runs(29) - planned_runs(1)
    per_run_wall = (med["large"][0] - med["small"][0]) / extra * 1000
    per_run_cpu = (med["large"][1] - med["small"][1]) / extra * 1000
    print(f"per run, creating and checking its doit task: {per_run_wall:.2f} ms wall, {per_run_cpu:.2f} ms CPU "
          f"((k=29 - k=1) / {extra} runs)   goal <= {GOAL_MS_PER_RUN} ms")


if __name__ == "__main__":
    main()
