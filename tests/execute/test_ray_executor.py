"""executor=ray on a local two-node Ray cluster (SPEC X9): parity with local, dispatch counts,
failures by kind, Ctrl-C, a worker running another lab, the cluster-wide provider cap, sandboxes.

One cluster serves every test here (Ray costs seconds and about 1.5 GiB to start); the tests run in
one xdist group so no other test worker starts a second one. Each driver is a real ``lab run``, and
each costs seconds of CPU (the driver joins the cluster, Ray starts worker processes for its job):
behaviours that can share a command share it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.done_stub import DoneStub, done_stub
from tests.helpers.lab_process import BIN, ROOT, command_env, run_cmd
from tests.helpers.ray_cluster import STUB_KEY_ENV, RayCluster, events, make_suite, start_cluster, started

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("ray-nodes"))


def on_ray(cluster: RayCluster) -> list[str]:
    return ["executor=ray", f"executor.address={cluster.address}", "progress=true"]


def records(data: Path) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(data.glob("*/*/runs/*/*.json")):
        found[(path.parent.name, path.stem)] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items()
                if not any(word in k.lower() for word in ("wall", "ms", "time", "at", "seconds"))}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _report(data: Path) -> dict[str, Any]:
    [path] = data.glob("*/*/reports/*/report.json")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _bwrap_here() -> str | None:
    """None when sandbox=bwrap works on this machine (whose bwrap the local nodes share), else its error."""
    from lab.errors import SandboxError
    from lab.execute.sandboxing import open_sandbox

    try:
        return None if open_sandbox("bwrap").name == "bwrap" else "?"
    except SandboxError as exc:
        return str(exc)


def test_a_sweep_without_an_address_runs_on_one_local_cluster_whose_workers_sandbox_as_locally(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before any test starts the shared cluster: this command starts its own, inside the driver.
    monkeypatch.setenv("RAY_agent_register_timeout_ms", "180000")  # a loaded machine starts Ray's agents slowly
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")  # another cluster named to Ray: without an address, never joined
    local_error = _bwrap_here()
    # jobs=2: the first eval starts the cluster from a run action's thread, which ends with that eval.
    # sandbox=bwrap: each worker opens its own bwrap, or fails the run with the line sandbox=bwrap gives locally.
    result = run_cmd(["lab", "run", "-m", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]",
                      "variant=baseline,no-compaction", "jobs=2", "sandbox=bwrap", "executor=ray", "progress=true"],
                     tmp_path / "runs")
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((tmp_path / "runs").glob("*/*/runs/*/*.json"))]
    assert len(found) == 2, result.stdout[-1500:] + result.stderr[-1500:]  # one record per eval
    assert [r["runtime"]["executor"] for r in found] == ["ray"] * 2
    assert len({r["configHash"] for r in found}) == 2
    assert len({r["runtime"]["node"] for r in found}) == 1  # the same node: the cluster was started once
    assert len(list((tmp_path / "runs").glob("*/*/reports/*/report.json"))) == 2
    assert started(result.stderr) == 2
    assert [r["inputs"]["sandbox"] for r in found] == ["bwrap"] * 2
    if local_error is None:
        assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-1500:]
        assert [(r["status"], r["sandbox"]) for r in found] == [("pass", "bwrap")] * 2, found[0]["error"]
    else:  # the workers have none: the runs fail with the one line sandbox=bwrap gives locally
        assert [r["error"] for r in found] == [{"kind": "sandbox", "message": local_error}] * 2
        assert local_error in result.stdout


def test_replay_on_two_nodes_matches_local(cluster: RayCluster, tmp_path: Path) -> None:
    # sandbox=auto on a cluster means bwrap on every worker; these nodes may have none (docs/distributed.md).
    # jobs=2: one run at a time on each node (SPREAD), each Ray worker started once per command. Three tasks
    # between them check with every kind of verifier of the suite (command, file-contains, file-equals,
    # tool-sequence, tree-diff-within): each more run costs the cluster a share of a Ray worker.
    base = ["lab", "run", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol,edit-respecting-hash,"
            "off-by-one-hidden]", "jobs=2", "sandbox=none"]
    local = run_cmd([*base, "progress=true"], tmp_path / "local")
    remote = run_cmd([*base, *on_ray(cluster)], tmp_path / "ray")
    assert local.returncode == remote.returncode == 0, remote.stderr[-2000:]
    mine, theirs = records(tmp_path / "local"), records(tmp_path / "ray")
    assert sorted(mine) == sorted(theirs) and len(theirs) == 3
    for key, record in theirs.items():
        assert (record["status"], _without_timings(record["verifiers"])) == (
            mine[key]["status"], _without_timings(mine[key]["verifiers"]))
        assert record["runtime"]["executor"] == "ray" and mine[key]["runtime"]["executor"] == "local"
    assert {r["runtime"]["node"] for r in theirs.values()} == set(cluster.node_dirs)  # both nodes ran runs
    assert _without_timings(_report(tmp_path / "ray")["summary"]) == _without_timings(
        _report(tmp_path / "local")["summary"])
    assert _report(tmp_path / "ray")["header"]["execution"]["executor"] == "ray"
    for node_root in cluster.node_dirs.values():  # the workers never wrote a record of their own
        assert not list((node_root / "data").rglob("*.json"))
    assert started(remote.stderr) == 3
    # What a worker unpacks (suite, cassettes) is in its process's run root, which the next lab command
    # reaps once the cluster's shutdown has killed the worker: nothing of the lab's own piles up beside it.
    for tmp in cluster.node_tmps.values():
        assert sorted(p.name for p in tmp.iterdir() if not p.name.startswith("lab-runs-")) == [], tmp
    unpacked = [p for tmp in cluster.node_tmps.values() for p in tmp.glob("lab-runs-*/*/lab-*")]
    assert unpacked, "the workers unpacked the suite into their run roots"


KILL_WORKER = """
import os, sys
marker, attempts, mode, done = sys.argv[1:5]
with open(attempts, "a") as f:
    f.write("x")
if os.path.exists(marker) and (mode == "once" or os.path.exists(done)):
    sys.exit(0)
open(marker, "w").close()
pid = os.getppid()
while pid > 1:  # the Ray worker executing this run: kill it, as os._exit in it would end it
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read()
    if cmdline.startswith(b"ray::") or b"default_worker.py" in cmdline:
        os.kill(pid, 9)
        break
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
sys.exit(0)
"""
COUNT_AND_FAIL = "import sys; open(sys.argv[1], 'a').write('x'); sys.exit(1)"
BLOCK_ONCE = """
import os, sys, time
fifo, done = sys.argv[1], sys.argv[2]
if os.path.exists(done):
    sys.exit(0)
with open(fifo, "w") as f:
    f.write("started\\n")
time.sleep(600)  # blocks until the cancelled run kills it (sys.argv[3] names it in ps)
"""


@pytest.fixture
def counting_stub() -> Iterator[tuple[str, type[DoneStub]]]:
    """The stub provider: DONE after 0.5 s, so calls overlap unless something caps them."""
    with done_stub(latency_s=0.5) as stub:
        yield stub


def _processes_naming(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _workers_named(cluster: RayCluster, prefix: str) -> list[int]:
    """The worker processes of this cluster's raylets whose title starts with ``prefix`` (e.g. an actor's)."""
    raylets = {node.all_processes["raylet"][0].process.pid for node in cluster.cluster.list_all_nodes()}
    found = []
    for pid in _processes_naming(prefix):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                title = cmdline.read()
        except OSError:
            continue
        if parent in raylets and title.startswith(prefix.encode()):
            found.append(pid)
    return found


def _by_task(stderr: str, event: str) -> list[str]:
    return sorted(e["taskId"] for e in events(stderr) if e.get("event") == event)


def test_lost_workers_failing_runs_the_provider_cap_and_ctrl_c_on_the_cluster_then_the_same_command_resumes(
        cluster: RayCluster, tmp_path: Path, counting_stub: tuple[str, type[DoneStub]]) -> None:
    """One command meets every kind of failure while a fourth run blocks, its runs' model calls capped at one
    in flight across both nodes; Ctrl-C then cancels the blocking run on its worker, and the same command sends
    only the runs left to do: the cancelled one and the infrastructure error."""
    url, stub = counting_stub
    marks, fifo, done = tmp_path / "marks", tmp_path / "started", tmp_path / "done"
    marks.mkdir()
    os.mkfifo(fifo)
    token = f"lab-cancel-{os.getpid()}-{tmp_path.name}"
    suites = make_suite(tmp_path / "suites", "faults", {
        "killed-once": ["python3", "-c", KILL_WORKER, str(marks / "once"), str(marks / "once.n"), "once", str(done)],
        # killed on every try until the test says done: after max_retries an infrastructure error, run again later
        "killed-always": ["python3", "-c", KILL_WORKER, str(marks / "always"), str(marks / "always.n"), "always",
                          str(done)],
        "fails": ["python3", "-c", COUNT_AND_FAIL, str(marks / "fails.n")],
        "blocks": ["python3", "-c", BLOCK_ONCE, str(fifo), str(done), token]})
    # jobs=4: four runs at once, spread over both nodes (executor.spread), each calling the model first: a cap
    # held per node or per worker would let two calls through at once. The key is in the workers' environment.
    argv = ["lab", "run", f"suite_dir={suites}", "suite=faults", "provider=openai", f"provider.base_url={url}",
            f"provider.api_key_env={STUB_KEY_ENV}", "provider.max_concurrent_calls=1", "preflight=false", "k=1",
            "yes=true", "sandbox=none", "trust_local=true", "jobs=4", "executor.max_retries=1", *on_ray(cluster)]
    env = command_env() | {"LAB_DATA_DIR": str(tmp_path / "runs")}
    with open(tmp_path / "stdout", "w", encoding="utf-8") as stdout:
        driver = subprocess.Popen([str(BIN / "lab"), *argv[1:]], cwd=ROOT, env=env, stdout=stdout,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        err: list[str] = []
        others_done = threading.Event()

        def read_events() -> None:  # the three other runs finished: only the blocking one is in flight
            assert driver.stderr is not None
            for line in driver.stderr:
                err.append(line)
                if len(_by_task("".join(err), "run_finished")) == 3:
                    others_done.set()

        reader = threading.Thread(target=read_events, daemon=True)
        reader.start()
        opened = threading.Thread(target=lambda: fifo.read_text(), daemon=True)
        opened.start()
        opened.join(timeout=180)  # the blocking verifier on a worker has started
        assert not opened.is_alive(), "the run's verifier never started: " + "".join(err)[-2000:]
        assert others_done.wait(timeout=180), "".join(err)[-2000:]
        assert _processes_naming(token)
        assert len(_workers_named(cluster, "ray::CallLimiter")) == 1  # one limiter for the eval's endpoint
        driver.send_signal(signal.SIGINT)
        assert driver.wait(timeout=120) == 130, "".join(err)[-2000:]
        reader.join(timeout=60)
    first = "".join(err)
    assert "cancelled" in first
    found = {task: record for (task, _), record in records(tmp_path / "runs").items()}
    assert sorted(found) == ["fails", "killed-always", "killed-once"]  # no partial record of the cancelled run
    assert _processes_naming(token) == []  # the blocking verifier was killed on its worker
    assert found["killed-once"]["status"] == "pass"
    assert (marks / "once.n").read_text() == "xx"  # killed, then tried again once
    assert found["killed-always"]["status"] == "error"
    assert found["killed-always"]["error"]["kind"] == "worker_lost"
    assert (marks / "always.n").read_text() == "xx"  # max_retries=1: two tries, then an infrastructure error
    assert found["fails"]["status"] == "fail"
    assert (marks / "fails.n").read_text() == "x"  # a failing run is data: never tried again
    assert _by_task(first, "run_finished") == ["fails", "killed-always", "killed-once"]  # one record each
    assert (stub.calls, stub.peak) == (6, 1)  # a call per try (killed ones twice), never two at once

    done.touch()
    again = run_cmd(argv, tmp_path / "runs")
    assert again.returncode == 0, again.stderr[-2000:]
    # Only the stale runs are sent: the cancelled one and the infrastructure error; results stay on the driver.
    assert _by_task(again.stderr, "run_started") == ["blocks", "killed-always"]
    assert _by_task(again.stderr, "run_skipped") == ["fails", "killed-once"]
    assert {task: r["status"] for (task, _), r in records(tmp_path / "runs").items()} == {
        "blocks": "pass", "killed-always": "pass", "killed-once": "pass", "fails": "fail"}
    assert [(marks / f"{name}.n").read_text() for name in ("once", "always", "fails")] == ["xx", "xxx", "x"]
    assert (stub.calls, stub.peak) == (8, 1)


def test_a_worker_with_another_lab_refuses_the_run_naming_both_digests(cluster: RayCluster, tmp_path: Path) -> None:
    other = tmp_path / "other-lab"
    shutil.copytree(ROOT / "lab", other / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "lab" / "execute" / "run.py", "a", encoding="utf-8") as source:
        source.write("\nANOTHER_HARNESS = True  # code, not a comment: comments are not in the harness digest\n")
    # Every worker of this command imports the other lab: the job's runtime_env puts it first on their path,
    # as Ray's job submission does (the driver itself runs this lab). From another directory: Ray puts the
    # driver's working directory first on its workers' path.
    job = {"runtime_env": {"env_vars": {"PYTHONPATH": str(other)}}}
    env = command_env() | {
        "LAB_DATA_DIR": str(tmp_path / "runs"), "RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps(job)}
    result = subprocess.run([str(BIN / "lab"), "run", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]",
                             "sandbox=none", *on_ray(cluster)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, check=False)
    assert records(tmp_path / "runs"), result.stdout[-1500:] + result.stderr[-1500:]
    [record] = records(tmp_path / "runs").values()
    assert record["error"]["kind"] == "harness_mismatch"
    driver_digest = record["harnessDigest"]
    line = next(line for line in result.stdout.splitlines() if "harness_mismatch" in line)  # the run's line
    assert driver_digest in line and "its lab harness digest is " in line
    assert line.split("its lab harness digest is ")[1].split(",")[0] != driver_digest
    assert result.returncode == 1


def test_the_provider_cap_holds_on_one_machine_too(tmp_path: Path, counting_stub: tuple[str, type[DoneStub]],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    url, stub = counting_stub
    suites = make_suite(tmp_path / "suites", "capped", {f"t{i}": ["true"] for i in range(4)})  # trivially cheap runs
    monkeypatch.setenv(STUB_KEY_ENV, "stub-key-not-a-secret")
    result = run_cmd(["lab", "run", f"suite_dir={suites}", "suite=capped", "provider=openai",
                      f"provider.base_url={url}", f"provider.api_key_env={STUB_KEY_ENV}",
                      "provider.max_concurrent_calls=2", "preflight=false", "k=2", "jobs=4", "yes=true",
                      "sandbox=none", "trust_local=true"], tmp_path / "runs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert stub.calls == 8
    assert stub.peak == 2  # reached, never exceeded
