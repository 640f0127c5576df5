"""A replayed run of agent=reference vs the built-in agent on the same task (goal: <= 2x, issue 12).

Both replay the same smoke-coding task in-process (the lab's ``execute_run``,
no doit): the built-in agent from the bundled cassette, the reference agent
(a separate process on the openai SDK, through the per-run gateway) from a
cassette recorded first with the scripted provider behind the gateway. The
reference agent's own start-up (interpreter plus ``import openai``) is
the time from its process start to its first model call (the run record's
``executor.startupMs``: interpreter, ``import openai``, client set-up), is
reported apart and subtracted from that same run. Rounds alternate the two agents; medians are printed.
Both sides run in the same sandbox (the eval's ``sandbox=auto``; printed) and
their verifiers run there too. The lab process's own CPU time per run is
printed beside the wall time (less sensitive to load than the wall time);
processes inside the sandbox are not counted there (bubblewrap's init reaps
them, so ``RUSAGE_CHILDREN`` never sees them).

    .venv/bin/python benchmarks/command_agent_replay.py [rounds, default 5] [task]
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

GOAL_RATIO = 2.0


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    task = sys.argv[2] if len(sys.argv) > 2 else "fix-default-argument"
    os.environ["LAB_DATA_DIR"] = tempfile.mkdtemp()
    from lab.build.graph import prepare
    from lab.execute.run import execute_run

    cassettes = Path(tempfile.mkdtemp())
    reference = ["suite=smoke-coding", "provider=scripted", "agent=reference", f"tasks=[{task}]",
                 f"cassette_dir={cassettes}"]
    record = execute_run((p := prepare([*reference, "mode=record"])).ctx, p.specs[0])
    assert record["status"] == "pass", record["error"]
    runs = {"builtin": prepare(["suite=smoke-coding", "provider=scripted", "mode=replay", f"tasks=[{task}]"]),
            "reference": prepare([*reference, "mode=replay", "k=1"])}
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    sandboxes: dict[str, set[str]] = {name: set() for name in runs}
    starts = []
    for i in range(rounds):
        for name in (["builtin", "reference"] if i % 2 == 0 else ["reference", "builtin"]):
            prep = runs[name]
            cpu0 = _cpu()
            t0 = time.perf_counter()
            rec = execute_run(prep.ctx, prep.specs[0])
            walls[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu() - cpu0)
            sandboxes[name].add(str(rec["sandbox"]))
            assert rec["status"] == "pass", (name, rec["error"])
            if name == "reference":
                starts.append(rec["executor"]["startupMs"] / 1000)
    excluding = statistics.median(w - s for w, s in zip(walls["reference"], starts))
    start = statistics.median(starts)
    builtin, ref = statistics.median(walls["builtin"]), statistics.median(walls["reference"])
    own = {name: statistics.median(cpu[name]) * 1000 for name in runs}
    where = ", ".join(f"{name} {'/'.join(sorted(names))}" for name, names in sandboxes.items())
    print(f"task {task}, {rounds} rounds, sandbox: {where}, load average {os.getloadavg()[0]:.1f}, medians:")
    print(f"  built-in agent, replayed:             {builtin * 1000:8.1f} ms per run"
          f"  (lab process CPU {own['builtin']:.0f} ms)")
    print(f"  reference agent, replayed (whole):    {ref * 1000:8.1f} ms per run"
          f"  (lab process CPU {own['reference']:.0f} ms)")
    print(f"  reference agent start-up (to its first call): {start * 1000:8.1f} ms")
    print(f"  reference agent, excluding start-up:  {excluding * 1000:8.1f} ms per run")
    ratio = excluding / builtin
    print(f"  ratio excluding start-up: {ratio:.2f}x (goal <= {GOAL_RATIO}x): {'ok' if ratio <= GOAL_RATIO else 'OVER'}")


def _cpu() -> float:
    """CPU seconds (user + system) of this process, all threads (the gateway's included)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


if __name__ == "__main__":
    main()
