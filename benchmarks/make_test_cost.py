"""What `make test` costs: wall time and CPU seconds, against the goal of 5 minutes and 240 s of CPU.

Usage: ``.venv/bin/python benchmarks/make_test_cost.py [pytest args …]`` from the
checkout (default: the Makefile's own command, ``-n auto --dist loadgroup``).

CPU is counted twice, and both are printed:

- ``rusage``: user + system time of every process the run waited for (what
  ``/usr/bin/time`` prints); the tests' fork server reaps its commands, so they count;
- ``machine``: user + nice + system time of the whole machine while the run
  lasted (``/proc/stat``). It also counts what no one waits for (Ray's
  daemons, Chromium's helpers) and anything else running, so it is honest only
  on an idle machine; the load average before the run says whether it was.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WALL_GOAL_S = 300.0
CPU_GOAL_S = 240.0


def machine_cpu_s() -> float:
    """User + nice + system seconds of every CPU since boot (``/proc/stat``, in clock ticks)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = stat.readline().split()
    return (int(fields[1]) + int(fields[2]) + int(fields[3])) / os.sysconf("SC_CLK_TCK")


def main(args: list[str]) -> int:
    pytest_args = args or ["-q", "-n", "auto", "--dist", "loadgroup", "--durations=10"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as `make test`
    load = os.getloadavg()
    machine0, wall0 = machine_cpu_s(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env, check=False)
    wall = time.monotonic() - wall0
    machine = machine_cpu_s() - machine0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rusage = usage.ru_utime + usage.ru_stime
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"wall     {wall:7.1f} s  ({wall / WALL_GOAL_S:.2f}x the goal of {WALL_GOAL_S:.0f} s)")
    print(f"rusage   {rusage:7.1f} s CPU  (user {usage.ru_utime:.1f}, system {usage.ru_stime:.1f}; "
          f"{rusage / CPU_GOAL_S:.2f}x the goal of {CPU_GOAL_S:.0f} s)")
    print(f"machine  {machine:7.1f} s CPU  ({machine / CPU_GOAL_S:.2f}x the goal)")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
