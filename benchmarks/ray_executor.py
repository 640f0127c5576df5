"""executor=local vs executor=ray: 100 live runs at 2 s of provider latency, the same jobs.

A loopback OpenAI-compatible stub answers "DONE" after LATENCY_S, so each
run is one model call and one verifier (suite `core`, 5 tasks x k=20). The
Ray side runs on a local cluster this script starts (two nodes, each with
`lab_run` slots), the driver joining it with `executor.address`; the key
reaches the workers through their nodes' environment only.

Prints, side by side: wall time of the whole command, the lab's CPU per run
on the driver (the `lab` process and its children, from getrusage) and on
the cluster (Ray's daemons and workers), the cluster's start cost, and the
per-run dispatch overhead: the median time the driver waited for a run
beyond the run's own wall time, also for 21 replayed runs one at a time.

    .venv/bin/python benchmarks/ray_executor.py [jobs] [runs_per_task] [OVERRIDE…]   # default 20 20

OVERRIDEs go to the executor=ray commands only, e.g. ``executor.spread=false``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import BIN

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.helpers.done_stub import done_stub  # noqa: E402 (the stub provider, shared with the tests)

LATENCY_S = 2.0
KEY_ENV = "BENCH_PROVIDER_KEY"


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(argv: list[str], data: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s of the command and its children, median dispatch overhead ms) of one ``lab`` command.

    A run's dispatch overhead is the time the driver waited for it (``run_started`` to
    ``run_finished``) beyond the run's own ``wallMs`` (measured where it executed).
    """
    full = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")} | {"LAB_DATA_DIR": str(data)} | env
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    result = subprocess.run([str(BIN / "lab"), *argv, "progress=true"], cwd=data.parent, env=full,
                            capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if result.returncode not in (0, 1):
        raise SystemExit(f"lab {' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return wall, children_cpu_s() - cpu0, dispatch_overhead_ms(result.stderr, data)


def dispatch_overhead_ms(stderr: str, data: Path) -> float:
    from datetime import datetime

    seen: dict[tuple[str, int], dict[str, float]] = {}
    for line in stderr.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") in ("run_started", "run_finished"):
                key = (event["taskId"], event["repetition"])
                seen.setdefault(key, {})[event["event"]] = datetime.fromisoformat(
                    event["ts"].replace("Z", "+00:00")).timestamp()
    overheads = []
    for path in data.glob("*/*/runs/*/*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        times = seen.get((record["taskId"], record["repetition"]), {})
        if len(times) == 2:
            overheads.append((times["run_finished"] - times["run_started"]) * 1000 - record["wallMs"])
    overheads.sort()
    return overheads[len(overheads) // 2]


def main() -> None:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    per_task = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    on_ray = sys.argv[3:]
    runs = 5 * per_task
    load_before = os.getloadavg()
    with done_stub(LATENCY_S) as (base, _):
        argv = ["run", "suite=core", f"k={per_task}", "provider=openai",
                "provider.stream=false", f"provider.base_url={base}", f"provider.api_key_env={KEY_ENV}",
                "preflight=false", f"jobs={jobs}"]
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            local_wall, local_cpu, local_overhead = command(argv, root / "local", {KEY_ENV: "bench-key-not-secret"})

            from ray.cluster_utils import Cluster

            os.environ["RAY_agent_register_timeout_ms"] = "180000"
            node_env = {KEY_ENV: "bench-key-not-secret", "RAY_USAGE_STATS_ENABLED": "0"}
            cpu0, t0 = children_cpu_s(), time.perf_counter()
            cluster = Cluster(initialize_head=True, head_node_args={
                "num_cpus": 1, "resources": {"lab_run": jobs // 2}, "env_vars": node_env, "include_dashboard": False})
            cluster.add_node(num_cpus=1, resources={"lab_run": jobs - jobs // 2}, env_vars=node_env)
            cluster.wait_for_nodes()
            start_s = time.perf_counter() - t0
            try:
                ray_wall, driver_cpu, ray_overhead = command([*argv, "executor=ray", f"executor.address={cluster.address}",
                                                              *on_ray], root / "ray", {})
                # One run at a time (replays, jobs=1): the dispatch cost alone, without 2 cores shared by 20 workers.
                one = ["run", "suite=smoke-coding", "mode=replay", "k=3", "jobs=1", "sandbox=none"]
                _, seq_local_cpu, seq_local = command(one, root / "seq-local", {})
                _, seq_driver_cpu, seq_ray = command([*one, "executor=ray", f"executor.address={cluster.address}",
                                                      *on_ray], root / "seq-ray", {})
            finally:
                cluster.shutdown()
            # Ray's daemons and workers, reaped at shutdown: over the 100 live runs and the 21 replays.
            cluster_cpu = children_cpu_s() - cpu0 - driver_cpu - seq_local_cpu - seq_driver_cpu
    load = os.getloadavg()
    ideal = -(-runs // jobs) * LATENCY_S
    print(f"{runs} live runs, {LATENCY_S:.0f} s per model call, jobs={jobs} (the slowest run's latency "
          f"bounds a wave; {runs // jobs} waves need at least {ideal:.0f} s){' '.join(['', *on_ray])}")
    print(f"{'':34}{'local':>12}{'ray (2 nodes)':>16}")
    print(f"{'wall time of the command':34}{local_wall:>11.1f}s{ray_wall:>15.1f}s")
    print(f"{'lab CPU per run, driver':34}{local_cpu / runs * 1000:>10.0f}ms{driver_cpu / runs * 1000:>14.0f}ms")
    print(f"{'CPU per run, cluster (workers+Ray)':34}{'-':>12}{cluster_cpu / (runs + 21) * 1000:>14.0f}ms"
          "  (over all 121 runs, Ray's daemons included)")
    print(f"{'dispatch overhead per run (median)':34}{local_overhead:>10.0f}ms{ray_overhead:>14.0f}ms")
    print(f"Ray cluster start (2 nodes): {start_s:.1f} s")
    print(f"21 replayed runs one at a time (jobs=1), dispatch overhead per run (median): local {seq_local:.0f} ms, "
          f"ray {seq_ray:.0f} ms (+{seq_ray - seq_local:.0f} ms)")
    print(f"load average at the start {load_before[0]:.1f}, at the end {load[0]:.1f} (1 min), "
          f"{os.cpu_count()} cores: figures from a loaded machine include waiting for a core")


if __name__ == "__main__":
    main()
