"""Report build over 10k and 100k synthetic run record files, each build a whole process timed from outside.

The record files are written first (``--tasks`` tasks, 50 by default; mixed
statuses, usage, three verifiers with stderr tails and six events each, the
run's inputs); then each build runs in a child process under
``/usr/bin/time -v``, as an eval's report task does it: the record files,
each run's planned inputs, ``lab.report.stream.write_report_from_files``.
Wall seconds, CPU seconds and peak RSS come from the OS; sizes are
interleaved across repetitions and the medians printed, with the 100k / 10k
ratios (a linear build gives ratios near 10).

    .venv/bin/python benchmarks/report_build.py [N …] [--repeats R] [--tasks T] [--lab DIR …]

``--lab DIR`` builds with the lab package found in DIR (another checkout;
``.`` is this one), repeatable for before / after figures measured side by
side; a lab without the streaming writer loads every record and calls
``build_report`` and ``write_report``, as its report task did.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SHA = "0" * 64
TASKS = 50

CHILD = """
import json, sys
from pathlib import Path
listing, out, header = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
paths = [Path(p) for p in listing.read_text().split()]
expected = [{"configHash": header["configHash"], "harnessDigest": header["harnessDigest"],
             "suiteDigest": header["suiteDigest"], "taskId": p.parent.name, "baseSeed": 0,
             "repetition": int(p.stem.split("-r")[1])} for p in paths]
if len(sys.argv) > 4:  # the inputs alone: what the process holds before any report is built
    import lab.report
    raise SystemExit(0)
try:
    from lab.report.stream import write_report_from_files
except ImportError:  # the in-memory writer: every record loaded, as report_action did
    from lab.report import build_report, write_report
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths if p.exists()]
    wanted = {json.dumps(i, sort_keys=True) for i in expected}
    runs = [r for r in runs if json.dumps(r.get("inputs"), sort_keys=True) in wanted]
    write_report(out, build_report({**header, "voided": len(runs) < len(paths)}, runs), runs)
else:
    write_report_from_files(out, header, paths, expected=expected)
"""


def synthetic_records(n: int, tasks: int = TASKS, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` run records over ``tasks`` tasks: mixed statuses, usage, three verifiers and six events each."""
    rng = random.Random(seed)
    for i in range(n):
        status = rng.choices(["pass", "fail", "budget_exceeded", "error"], [70, 20, 5, 5])[0]
        verdicts = [{"id": f"v{j}", "kind": "command", "weight": 1.0, "detail": "exit code 0 as expected",
                     "status": "pass" if status == "pass" or rng.random() < 0.5 else "fail",
                     "diagnostics": {"exitCode": 0, "stderrTail": "x" * rng.randint(0, 2000)}} for j in range(3)]
        tokens_in, tokens_out = rng.randint(500, 50_000), rng.randint(50, 5_000)
        task_id, repetition = f"task-{i % tasks:05d}", i // tasks
        yield {
            "schemaVersion": 1, "suiteId": "bench", "suiteVersion": "1.0.0", "suiteDigest": SHA,
            "taskId": task_id, "repetition": repetition, "baseSeed": 0, "seed": repetition,
            "configHash": SHA, "harnessDigest": SHA, "mode": "live", "provider": "openai", "model": "m",
            "status": status, "claim": rng.choice(["success", "gave_up", "none"]), "stopReason": "answered",
            "budgetExceeded": None, "finalMessage": "DONE", "verifiers": [] if status == "error" else verdicts,
            "score": None if status == "error" else sum(v["status"] == "pass" for v in verdicts) / 3,
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out,
                      "cachedInputTokens": rng.randint(0, tokens_in), "cachedPartial": False},
            "compactionUsage": None, "turns": 4, "toolCalls": 3, "compactions": 0,
            "events": [{"seq": s, "type": "tool_call", "turn": s, "id": f"call_{s}_0", "tool": "read_file",
                        "arguments": {"path": "a.py"}, "effect": "read", "outcome": "ok", "error": None}
                       for s in range(6)],
            "incidents": [], "error": {"kind": "provider", "message": "503"} if status == "error" else None,
            "divergence": None, "startedAt": "2030-01-01T00:00:00.000Z", "finishedAt": "2030-01-01T00:00:01.000Z",
            "wallMs": rng.randint(1_000, 60_000), "workspace": None,
            "inputs": {"configHash": SHA, "harnessDigest": SHA, "suiteDigest": SHA, "taskId": task_id,
                       "baseSeed": 0, "repetition": repetition}}


def write_records(n: int, tasks: int, root: Path) -> Path:
    """The record files of ``n`` runs under ``root/runs/<task>/``, in planned (shuffled) order; returns a listing."""
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for record in synthetic_records(n, tasks):
        path = root / "runs" / record["taskId"] / f"s0-r{record['repetition']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        paths.append(f"{path}\n")
    random.Random(n).shuffle(paths)  # an eval plans its runs in a shuffled order
    listing = root / "paths.txt"
    listing.write_text("".join(paths), encoding="utf-8")
    return listing


def header(n: int, tasks: int) -> dict[str, Any]:
    return {"runId": "bench.000000000000.k1.s0", "suiteId": "bench", "suiteVersion": "1.0.0",
            "suiteDigest": SHA, "harnessVersion": "0.1.0", "harnessDigest": SHA, "configHash": SHA,
            "provider": "openai", "model": "m", "mode": "live", "k": max(1, n // tasks), "seed": 0,
            "rates": {"input": 1.0, "output": 4.0}, "runsRequested": n, "tasksRequested": tasks}


def build_in_child(n: int, tasks: int, listing: Path, out: Path, lab: Path | None,
                   inputs_only: bool = False) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one report build in its own process; CPU and RSS from /usr/bin/time -v.

    ``inputs_only``: the same process up to the build (the paths and planned
    inputs held, the lab imported), for the share of the peak that is not the report's.
    """
    env = None
    if lab is not None:  # that checkout's lab first, and not this one's editable install
        shim = out.parent / "shim"
        shim.mkdir(exist_ok=True)
        (shim / "sitecustomize.py").write_text(
            "import sys\nsys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in repr(f)]\n")
        env = {**os.environ, "PYTHONPATH": f"{shim}:{lab.absolute()}"}
    t0 = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-c", CHILD, str(listing), str(out),
                             json.dumps(header(n, tasks)), *(["inputs-only"] if inputs_only else [])],
                            capture_output=True, text=True, check=False,
                            env=env, cwd=tempfile.gettempdir())
    wall_s = time.perf_counter() - t0
    if result.returncode != 0:
        raise SystemExit(f"report build failed:\n{result.stderr[-3000:]}")
    fields = {k.strip(): v.strip() for k, _, v in (line.rpartition(": ") for line in result.stderr.splitlines())}
    cpu_s = float(fields["User time (seconds)"]) + float(fields["System time (seconds)"])
    return wall_s, cpu_s, int(fields["Maximum resident set size (kbytes)"]) / 1024


Sample = tuple[float, float, float]


def measure(sizes: list[int], repeats: int, tasks: int,
            labs: list[Path | None]) -> dict[tuple[Path | None, int], tuple[float, ...]]:
    """Median (wall s, CPU s, peak RSS MiB, the process's RSS before the build) per (lab, size).

    Labs and sizes are interleaved within each repetition, so a change in the
    machine's load falls on all of them alike.
    """
    # In memory (tmpfs) when the machine has one: writing and deleting 110k small files on a
    # disk is slower than the builds being measured, and would time the disk, not the lab.
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        listings = {n: write_records(n, tasks, Path(tmp) / str(n)) for n in sizes}
        keys = [(lab, n) for lab in labs for n in sizes]
        samples: dict[tuple[Path | None, int], list[Sample]] = {key: [] for key in keys}
        inputs = {(lab, n): build_in_child(n, tasks, listings[n], Path(tmp) / str(n) / "report", lab, True)[2]
                  for lab, n in keys}
        for _ in range(repeats):
            for lab, n in keys:
                sample = build_in_child(n, tasks, listings[n], Path(tmp) / str(n) / "report", lab)
                samples[(lab, n)].append(sample)
                print(f"  (sample: {lab or 'this lab'}, {n} runs: {sample[0]:.1f} s wall, {sample[1]:.1f} s CPU, "
                      f"{sample[2]:.0f} MiB)", file=sys.stderr, flush=True)
    return {key: (*(statistics.median(s[i] for s in samples[key]) for i in range(3)), inputs[key]) for key in keys}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=TASKS)
    parser.add_argument("--lab", type=Path, action="append", default=None,
                        help="a directory holding another lab package (repeatable; '.' is this checkout's)")
    args = parser.parse_args(argv)
    sizes = args.sizes
    labs: list[Path | None] = [None if lab == Path(".") else lab for lab in args.lab or [Path(".")]]
    results = measure(sizes, args.repeats, args.tasks, labs)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    print(f"(load average at the end: {' '.join(load)})")
    for lab in labs:
        for n in sizes:
            wall_s, cpu_s, rss, inputs = results[(lab, n)]
            print(f"{lab or 'this lab'}: report build, {n} runs over {args.tasks} tasks: {wall_s:.1f} s wall, "
                  f"{cpu_s:.1f} s CPU, peak RSS {rss:.0f} MiB (the process before the build: {inputs:.0f} MiB)")
        if len(sizes) > 1:
            (w0, c0, r0, _), (w1, c1, r1, _) = results[(lab, sizes[0])], results[(lab, sizes[-1])]
            print(f"{lab or 'this lab'}: ratio {sizes[-1]} / {sizes[0]}: CPU x{c1 / c0:.1f}, wall x{w1 / w0:.1f}, "
                  f"peak RSS x{r1 / r0:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
