"""Overhead of the bwrap sandbox per command and per run, next to sandbox=none.

Runs ``true`` and ``python3 -c pass`` through each backend, interleaving the
backends rep by rep so that machine load hits both alike, and prints the
median wall time of each and the difference (the goal of issue 11: at most
40 ms per command). Each command is timed two ways:

- ``wait``: Popen + communicate, a blocking wait: the sandbox's own cost;
- ``run_process``: the lab's runner as it is today, whose timeout loop waits
  with ``Popen.wait(timeout)`` (a sleep loop with doubling delays), so the
  exit of a 30 ms command is noticed up to ~30 ms late: that latency lands
  on the sandboxed side only, because its commands take longer.

Also prints one replayed run's share (copy a bundled fixture, ``prepare`` it,
run ``python3 check.py`` twice: the ``run_command`` and the verifier), a
whole replayed run through the lab (``execute_run`` of the bundled ``core``
suite's ``debug-failing-function`` in replay, composed with ``sandbox=none``
and ``sandbox=bwrap``: task copy, git-free fixture, agent with its
``run_command`` calls, verifiers, no record written) and the one-off cost of
``resolve_backend("auto")`` (its probe sandbox).

    .venv/bin/python benchmarks/sandbox_overhead.py [repetitions]   # default 30
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.sandbox.base import SandboxBackend, spawn_args  # noqa: E402
from lab.sandbox.bwrap import SANDBOX_PATH, BwrapBackend  # noqa: E402
from lab.sandbox.none import NoneBackend  # noqa: E402
from lab.sandbox.process import run_launch  # noqa: E402
from lab.sandbox.reaper import RunRoot  # noqa: E402
from lab.sandbox.registry import resolve_backend  # noqa: E402

GOAL_MS = 40.0
# The same programs for both backends (absolute paths, found on the sandbox's
# PATH): `python3` on the lab's own PATH may be a slower wrapper (a pyenv
# shim), which would be measured instead of the sandbox.
TRUE = shutil.which("true", path=SANDBOX_PATH) or "true"
PYTHON = shutil.which("python3", path=SANDBOX_PATH) or "python3"
COMMANDS = {"true": [TRUE], "python3 -c pass": [PYTHON, "-c", "pass"]}
FIXTURE = ROOT / "suites" / "core" / "fixtures" / "edit-file"
RUN_COMMANDS = 2
"""A bundled replayed run: one ``run_command`` of check.py and the verifier."""


def _once_ms(backend: SandboxBackend, argv: list[str], workspace: Path, how: str) -> float:
    started = time.perf_counter()
    launch = backend.wrap(argv, workspace=workspace, env={})
    if how == "wait":
        with spawn_args(launch) as (argv, fds), subprocess.Popen(
                argv, env=launch.env, cwd=launch.cwd, pass_fds=fds, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) as proc:
            proc.communicate()
    else:
        run_launch(launch, timeout_ms=60_000)
    return (time.perf_counter() - started) * 1000


def _run_ms(backend: SandboxBackend, root: Path, rep: int) -> float:
    """One replayed run's share: copy the fixture, prepare it, two commands."""
    started = time.perf_counter()
    workspace = root / f"run-{backend.name}-{rep}"
    shutil.copytree(FIXTURE, workspace)
    backend.prepare(workspace)
    for _ in range(RUN_COMMANDS):
        _once_ms(backend, [PYTHON, "check.py"], workspace, "run_process")
    elapsed = (time.perf_counter() - started) * 1000
    shutil.rmtree(workspace)
    return elapsed


REPLAYED = ("core", "debug-failing-function")
"""The replayed run timed through the lab: a bundled task with run_command calls."""


def _commands(record: dict[str, Any]) -> int:
    calls = sum(1 for e in record["events"] if e.get("tool") == "run_command")
    return calls + sum(1 for v in record["verifiers"] if v["kind"] == "command")


def _replayed_runs(reps: int) -> tuple[dict[str, float], int]:
    """Median wall ms of one whole replayed run per backend (interleaved), and
    the commands one such run executes."""
    os.environ["LAB_DATA_DIR"] = tempfile.mkdtemp(prefix="lab-bench-data-")
    # sandbox=none takes PATH from the lab's environment: put the sandbox's
    # PATH first so both backends start the same python3 (see TRUE above).
    os.environ["PATH"] = f"{SANDBOX_PATH}:{os.environ.get('PATH', '')}"
    from lab.build.graph import prepare
    from lab.execute.run import execute_run

    suite, task = REPLAYED
    preps: dict[str, Any] = {name: prepare([f"suite={suite}", "mode=replay", f"sandbox={name}",
                                            f"tasks=[{task}]"]) for name in ("none", "bwrap")}
    times: dict[str, list[float]] = {name: [] for name in preps}
    for _ in range(reps + 1):  # the first rep warms up and is dropped
        for name, prep in preps.items():
            started = time.perf_counter()
            record = execute_run(prep.ctx, prep.specs[0])
            times[name].append((time.perf_counter() - started) * 1000)
            if record["status"] != "pass":
                raise SystemExit(f"replayed run under {name}: {record['status']} {record['error']}")
    shutil.rmtree(os.environ["LAB_DATA_DIR"], ignore_errors=True)
    medians = {name: statistics.median(values[1:]) for name, values in times.items()}
    return medians, _commands(record)


def _measure(backends: list[SandboxBackend], root: Path, reps: int) -> dict[str, dict[str, float]]:
    workspace = root / "ws"
    workspace.mkdir()
    backends[-1].prepare(workspace)
    for backend in backends:  # warm-up: page cache, the support files
        for argv in COMMANDS.values():
            _once_ms(backend, argv, workspace, "wait")
    times: dict[str, dict[str, list[float]]] = {}
    for rep in range(reps):
        for label, argv in COMMANDS.items():
            for how in ("wait", "run_process"):
                for backend in backends:
                    row = times.setdefault(f"{label} ({how})", {})
                    row.setdefault(backend.name, []).append(_once_ms(backend, argv, workspace, how))
        for backend in backends:
            row = times.setdefault(f"run: copy+prepare+{RUN_COMMANDS}x check.py", {})
            row.setdefault(backend.name, []).append(_run_ms(backend, root, rep))
    return {label: {name: statistics.median(values) for name, values in row.items()}
            for label, row in times.items()}


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if reps < 20:
        raise SystemExit("use at least 20 repetitions")
    started = time.perf_counter()
    resolved = resolve_backend("auto")
    resolve_ms = (time.perf_counter() - started) * 1000
    bwrap = resolved.backend
    if not isinstance(bwrap, BwrapBackend):
        raise SystemExit(f"bwrap is not usable here: {resolved.warning}")
    with RunRoot.create() as root:
        medians = _measure([NoneBackend(), bwrap], root.path, reps)
    replayed, commands = _replayed_runs(reps)
    medians[f"replayed run ({commands} commands)"] = replayed
    mode = (f"lab is root: setpriv to uid {bwrap.drop_to}" if bwrap.drop_to is not None
            else "unprivileged lab")
    print(f"sandbox overhead, median of {reps} interleaved reps "
          f"(bwrap {'.'.join(map(str, bwrap.version))}, {mode})")
    print(f"{'what':<34}{'none ms':>9}{'bwrap ms':>10}{'overhead ms':>13}  goal")
    for label, row in medians.items():
        overhead = row["bwrap"] - row["none"]
        goal = GOAL_MS * (RUN_COMMANDS if label.startswith("run:") else
                          commands if label.startswith("replayed") else 1)
        verdict = "ok" if overhead <= goal else "OVER"
        print(f"{label:<34}{row['none']:>9.1f}{row['bwrap']:>10.1f}{overhead:>13.1f}  "
              f"<= {goal:.0f} ms {verdict}")
    print(f"replayed run: {REPLAYED[0]}/{REPLAYED[1]} through execute_run (copy, agent, "
          f"verifiers), goal {GOAL_MS:.0f} ms per command")
    print(f"once per lab: resolve_backend('auto') incl. its probe sandbox: {resolve_ms:.1f} ms")


if __name__ == "__main__":
    main()
