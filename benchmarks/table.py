"""Every figure of the performance table (docs/performance.md), with its goal and the ratio, in one run.

Whole processes are timed from outside (wall clock), repetitions are
interleaved (A, B, C, A, B, C, …) and medians printed; peak RSS comes from
the OS (``/usr/bin/time -v``), a ``doit`` process's own CPU time from
``getrusage`` at its exit (its children, such as verifier commands, excluded).
Rows:

1. a second identical ``doit eval suite=smoke-coding mode=replay`` (nothing to do) against ``doit list``;
2. the same for a 203-run eval (k=29), and the task creation and up-to-date check per run it implies;
3. a report built over 10k and 100k run record files (the eval's report task, in its own process):
   peak RSS, and the 100k / 10k ratio;
4. 40 live runs (suite core, k=8), 2 streamed calls each, 200 ms per call on a loopback
   server, default sandbox: jobs=1 against jobs=20, and the lab's own CPU per run.

The timed commands run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment, as in a default Python set-up) after one warm-up
command has written it; otherwise every command would compile the lab and its
libraries from source (about 1 s of CPU on the reference machine).

    .venv/bin/python benchmarks/table.py [repeats] [rows]   # default: 5 repeats, rows 1,2,3,4
    .venv/bin/python benchmarks/table.py 3 4                # row 4 only, 3 repeats
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _common import BIN, ROOT

LATENCY_S = 0.2
LIVE_RUNS = 40  # suite core: 5 tasks, k=8
# Run inside each timed ``doit`` process: its own CPU time (getrusage, all threads, no children)
# at exit, and the process's clocks at the first and last of each lifecycle event.
_DRIVER = """
import atexit, json, resource, sys, time
out, marks = sys.argv[1], {}
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
def on_event(event):
    now = (time.perf_counter(), cpu())
    marks.setdefault(event["event"] + ":first", now)
    marks[event["event"] + ":last"] = now
def write():
    marks["exit"] = (time.perf_counter(), cpu())
    with open(out, "w") as fh:
        json.dump(marks, fh)
atexit.register(write)
marks["start"] = (time.perf_counter(), cpu())
sys.argv = ["doit", *sys.argv[2:]]
from lab.execute.events import observing
from doit.__main__ import main
with observing(on_event=on_event):
    main()
"""


@dataclass
class Sample:
    """One timed process: wall seconds from outside, its own CPU seconds, and event marks."""

    wall_s: float
    cpu_s: float
    marks: dict[str, tuple[float, float]] = field(default_factory=dict)

    def span(self, start: str, end: str) -> tuple[float, float]:
        """(wall s, CPU s) between two marks (``eval_started:first``, ``run_finished:last`` …)."""
        (w0, c0), (w1, c1) = self.marks[start], self.marks[end]
        return w1 - w0, c1 - c0


def child_env(data: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a timed command: no LAB_* from the caller, bytecode cache on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(LAB_DATA_DIR=str(data), **(extra or {}))
    return env


def doit(argv: list[str], data: Path, env: dict[str, str] | None = None) -> Sample:
    """Run one ``doit …`` process from the checkout; exit 0 or 1 expected (1: failed tasks)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as marks:
        t0 = time.perf_counter()
        result = subprocess.run([str(BIN / "python"), "-X", "faulthandler", "-c", _DRIVER, marks.name, *argv],
                                cwd=ROOT, env=child_env(data, env), capture_output=True, text=True, check=False)
        wall_s = time.perf_counter() - t0
        if result.returncode not in (0, 1):
            raise SystemExit(f"doit {' '.join(argv)} exited {result.returncode}:\n{result.stderr[-3000:]}")
        found = {k: tuple(v) for k, v in json.loads(Path(marks.name).read_text() or "{}").items()}
    return Sample(wall_s, found["exit"][1], found)  # type: ignore[arg-type]


def interleaved(cases: dict[str, tuple[list[str], Path, dict[str, str] | None]],
                repeats: int) -> dict[str, list[Sample]]:
    """Every case run in turn, ``repeats`` times: the samples per case."""
    samples: dict[str, list[Sample]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (argv, data, env) in cases.items():
            samples[name].append(doit(argv, data, env))
    return samples


def med(values: list[float]) -> float:
    return statistics.median(values)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def row(figure: str, now: str, goal: str, ok: bool) -> str:
    return f"| {figure} | {now} | {goal} | {'yes' if ok else 'NO'} |"


def count_records(data: Path) -> int:
    return sum(1 for _ in data.glob("**/runs/*/*.json"))


def noop_rows(repeats: int) -> list[str]:
    small, large = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    eval_small = ["eval", "suite=smoke-coding", "mode=replay"]
    eval_large = [*eval_small, "k=29"]
    doit(eval_small, small)  # the runs, once; the timed commands below have nothing to do
    doit(eval_large, large)
    doit(eval_small, small)  # warm-up: remembers the records (checked by content, lab.stamps)
    doit(eval_large, large)
    runs_small, runs_large = count_records(small), count_records(large)
    m = interleaved({"list": (["list"], small, None), "small": (eval_small, small, None),
                     "large": (eval_large, large, None)}, repeats)
    shutil.rmtree(small, ignore_errors=True)
    shutil.rmtree(large, ignore_errors=True)
    (listing, listing_cpu), (noop_small, small_cpu), (noop_large, large_cpu) = (
        (med([s.wall_s for s in m[k]]), med([s.cpu_s for s in m[k]])) for k in ("list", "small", "large"))
    per_run_ms = (noop_large - noop_small) / (runs_large - runs_small) * 1000
    per_run_cpu_ms = (large_cpu - small_cpu) / (runs_large - runs_small) * 1000
    return [row(f"no-op `doit eval suite=smoke-coding mode=replay` ({runs_small} runs) / `doit list`",
                f"{noop_small:.2f} s / {listing:.2f} s = {noop_small / listing:.1f}x "
                f"(CPU {small_cpu:.2f} s / {listing_cpu:.2f} s = {small_cpu / listing_cpu:.1f}x)", "<= 1.5x",
                noop_small / listing <= 1.5),
            row(f"no-op {runs_large}-run eval (k=29) / `doit list`",
                f"{noop_large:.2f} s / {listing:.2f} s = {noop_large / listing:.1f}x "
                f"(CPU {large_cpu:.2f} s / {listing_cpu:.2f} s = {large_cpu / listing_cpu:.1f}x)", "<= 1.5x",
                noop_large / listing <= 1.5),
            row(f"task creation and up-to-date check per run ({runs_large} vs {runs_small} runs)",
                f"{per_run_ms:.2f} ms wall, {per_run_cpu_ms:.2f} ms CPU", "<= 1 ms", per_run_ms <= 1.0)]


def report_rows(repeats: int) -> list[str]:
    import report_build

    sizes = (10_000, 100_000)
    # In memory (tmpfs) when there is one: writing 110k small files to a disk would time the disk.
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        listings = {n: _write_records(report_build.synthetic_records(n), Path(tmp) / str(n)) for n in sizes}
        samples: dict[int, list[tuple[float, float, float]]] = {n: [] for n in sizes}
        for _ in range(repeats):
            for n in sizes:
                samples[n].append(_build_report(n, listings[n], Path(tmp) / str(n) / "report"))
    (w10, c10, r10), (w100, c100, r100) = (tuple(med([s[i] for s in samples[n]]) for i in range(3)) for n in sizes)
    return [row("report build, 100k runs: peak RSS", f"{r100:.0f} MiB (10k: {r10:.0f} MiB)", "<= 300 MB",
                r100 * 2**20 <= 300e6),
            row("report build 100k / 10k runs", f"CPU {c100:.1f} s / {c10:.1f} s = {c100 / c10:.1f}x "
                f"(wall {w100:.0f} s / {w10:.1f} s = {w100 / w10:.1f}x)", "<= 11x", c100 / c10 <= 11)]


def _write_records(records: Any, root: Path) -> Path:
    """Record files as an eval leaves them (``runs/<task>/rN.json``); returns a file listing their paths."""
    listing = root / "paths.txt"
    root.mkdir(parents=True)
    with open(listing, "w", encoding="utf-8") as paths:
        for record in records:
            path = root / "runs" / record["taskId"] / f"r{record['repetition']}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            paths.write(f"{path}\n")
    return listing


# The eval's report task (lab.build.actions.report_action) over the listed record files.
_REPORT_CHILD = """
import json, sys, threading
from pathlib import Path
from types import SimpleNamespace
from lab.build.actions import report_action
events = SimpleNamespace(emit=lambda *a, **k: None)
prep = SimpleNamespace(ctx=SimpleNamespace(cancel=threading.Event(), events=events))
paths = [Path(p) for p in Path(sys.argv[1]).read_text(encoding="utf-8").split()]
result = report_action(prep, paths, Path(sys.argv[2]), json.loads(sys.argv[3]))
sys.exit(0 if isinstance(result, dict) else 1)
"""


def _build_report(n: int, listing: Path, out: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one report build in its own process, from /usr/bin/time -v."""
    header = {"runId": "bench.000000000000.k1.s0", "suiteId": "bench", "suiteVersion": "1.0.0",
              "suiteDigest": "0" * 64, "harnessVersion": "0.1.0", "harnessDigest": "0" * 64,
              "configHash": "0" * 64, "provider": "openai", "model": "m", "mode": "live", "k": n // 50,
              "seed": 0, "rates": {"input": 1.0, "output": 4.0}, "runsRequested": n, "tasksRequested": 50}
    t0 = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-v", str(BIN / "python"), "-c", _REPORT_CHILD, str(listing),
                             str(out), json.dumps(header)], cwd=ROOT, env=child_env(out.parent / "data"),
                            capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - t0
    if result.returncode != 0:
        raise SystemExit(f"report build of {n} runs failed:\n{result.stderr[-3000:]}")
    fields = {k.strip(): v.strip() for k, _, v in (line.rpartition(": ") for line in result.stderr.splitlines())}
    cpu_s = float(fields["User time (seconds)"]) + float(fields["System time (seconds)"])
    return wall_s, cpu_s, int(fields["Maximum resident set size (kbytes)"]) / 1024


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"id": "bench", "object": "chat.completion.chunk", "created": 0, "model": "stub",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class StreamingStub(BaseHTTPRequestHandler):
    """Chat completions over SSE after LATENCY_S, on keep-alive connections: a list_dir call
    first, then a final answer."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # As a production server does: http.server sends the headers and the body in two
        # writes, and without TCP_NODELAY the body waits for the client's delayed ACK (~40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        time.sleep(LATENCY_S)  # the simulated model latency is the point of this benchmark
        if any(m.get("role") == "tool" for m in request["messages"]):
            chunks = [_chunk({"role": "assistant", "content": "DONE: "}), _chunk({"content": "nothing to change"}),
                      _chunk({}, "stop")]
        else:
            call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": ""}}
            chunks = [_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
                      _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": \".\"}"}}]}),
                      _chunk({}, "tool_calls")]
        usage = {"id": "bench", "object": "chat.completion.chunk", "created": 0, "model": "stub", "choices": [],
                 "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
        body = b"".join(chunks) + b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def jobs_rows(repeats: int) -> list[str]:
    """Row 4. Each timed eval is followed by the same command again (a no-op: nothing to run),
    which gives the command's fixed cost; the runs' own CPU is also read between the first
    ``run_started`` and the last ``run_finished`` inside the process."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), StreamingStub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    argv = ["eval", "suite=core", "k=8", "provider=openai", "provider.stream=true", f"provider.base_url={base}",
            "provider.api_key_env=LAB_BENCH_KEY", "progress=false"]
    env = {"LAB_BENCH_KEY": "bench-key-not-secret"}
    live: dict[int, list[Sample]] = {1: [], 20: []}
    noop: dict[int, list[Sample]] = {1: [], 20: []}
    loads = [load()]
    warm = Path(tempfile.mkdtemp())
    doit([*argv, "jobs=20"], warm, env)  # bytecode caches written, sandbox probe paths warm
    shutil.rmtree(warm, ignore_errors=True)
    for _ in range(repeats):
        for jobs in (1, 20):
            data = Path(tempfile.mkdtemp())
            live[jobs].append(doit([*argv, f"jobs={jobs}"], data, env))
            noop[jobs].append(doit([*argv, f"jobs={jobs}"], data, env))
            if count_records(data) != LIVE_RUNS:
                raise SystemExit(f"jobs={jobs}: expected {LIVE_RUNS} run records, found {count_records(data)}")
            shutil.rmtree(data, ignore_errors=True)
        loads.append(load())
    server.shutdown()
    one, twenty = med([s.wall_s for s in live[1]]), med([s.wall_s for s in live[20]])
    in_eval = {j: med([s.span("eval_started:first", "eval_finished:last")[0] for s in live[j]]) for j in (1, 20)}
    fixed = {j: med([s.wall_s for s in noop[j]]) for j in (1, 20)}
    cpu_whole = med([(s.cpu_s - n.cpu_s) / LIVE_RUNS * 1000 for s, n in zip(live[1], noop[1])])
    cpu_runs = med([s.span("run_started:first", "run_finished:last")[1] / LIVE_RUNS * 1000 for s in live[1]])
    cpu_runs20 = med([s.span("run_started:first", "run_finished:last")[1] / LIVE_RUNS * 1000 for s in live[20]])
    return [row("40 runs x 2 streamed calls, 200 ms per call: jobs=1 / jobs=20 (whole processes)",
                f"{one:.1f} s / {twenty:.2f} s = {one / twenty:.1f}x; in-eval (eval_started to eval_finished) "
                f"{in_eval[1]:.1f} s / {in_eval[20]:.2f} s = {in_eval[1] / in_eval[20]:.1f}x; "
                f"the same command as a no-op: {fixed[1]:.2f} s / {fixed[20]:.2f} s; load {' -> '.join(loads)}",
                ">= 10x", one / twenty >= 10),
            row("lab CPU per such run (own process, verifiers excluded)",
                f"{cpu_whole:.1f} ms (jobs=1 process minus its no-op, / 40); between the first run_started "
                f"and the last run_finished: {cpu_runs:.1f} ms (jobs=20: {cpu_runs20:.1f} ms)", "<= 25 ms",
                cpu_whole <= 25)]


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "?")
    mem_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), 0)
    return (f"{os.cpu_count()} cores ({cpu}), {mem_kb / 2**20:.0f} GiB, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


ROWS = {1: noop_rows, 2: None, 3: report_rows, 4: jobs_rows}  # rows 1 and 2 come from one measurement


def main(argv: list[str]) -> int:
    repeats = int(argv[0]) if argv else 5
    wanted = {int(r) for r in argv[1].split(",")} if len(argv) > 1 else {1, 2, 3, 4}
    print(f"{date.today().isoformat()}, {machine()}; load average at start {load()}", flush=True)
    print(f"| figure | measured (median of {repeats}, interleaved) | goal | met |\n|---|---|---|---|", flush=True)
    report_repeats = max(1, min(repeats, 3))  # a 100k build takes minutes
    for number in (4, 1, 3):  # the load-sensitive wall-clock row first
        if number == 1 and not wanted & {1, 2}:
            continue
        if number != 1 and number not in wanted:
            continue
        function = ROWS[number]
        assert function is not None
        for line in function(report_repeats if number == 3 else repeats):
            print(line, flush=True)
    print(f"load average at end {load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
