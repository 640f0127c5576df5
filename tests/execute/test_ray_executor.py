"""executor=ray on a local two-node Ray cluster (SPEC X9): parity with local, dispatch counts,
failures by kind, Ctrl-C, a worker running another lab, the cluster-wide provider cap.

One cluster serves every test here (Ray costs seconds and about 1.5 GiB to start); the tests run in
one xdist group so no other test worker starts a second one. Each driver is a real ``lab run``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.lab_process import BIN, ROOT, run_cmd
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


def test_a_sweep_without_an_address_runs_its_evals_on_one_local_cluster(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # Before any test starts the shared cluster: this command starts its own, inside the driver.
    monkeypatch.setenv("RAY_agent_register_timeout_ms", "180000")  # a loaded machine starts Ray's agents slowly
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")  # another cluster named to Ray: without an address, never joined
    # jobs=2: the first eval starts the cluster from a run action's thread, which ends with that eval
    result = run_cmd(["lab", "run", "-m", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]",
                      "variant=baseline,no-compaction", "jobs=2", "sandbox=none", "executor=ray", "progress=true"],
                     tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-1500:]
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((tmp_path / "runs").glob("*/*/runs/*/*.json"))]
    assert [(r["status"], r["runtime"]["executor"]) for r in found] == [("pass", "ray")] * 2  # one record per eval
    assert len({r["configHash"] for r in found}) == 2
    assert len({r["runtime"]["node"] for r in found}) == 1  # the same node: the cluster was started once
    assert len(list((tmp_path / "runs").glob("*/*/reports/*/report.json"))) == 2
    assert started(result.stderr) == 2


def test_replay_on_two_nodes_matches_local_and_only_stale_runs_are_dispatched(cluster: RayCluster,
                                                                                 tmp_path: Path) -> None:
    # sandbox=auto on a cluster means bwrap on every worker; these nodes may have none (docs/distributed.md)
    base = ["lab", "run", "suite=smoke-coding", "mode=replay", "jobs=4", "sandbox=none"]
    local = run_cmd([*base, "progress=true"], tmp_path / "local")
    remote = run_cmd([*base, *on_ray(cluster)], tmp_path / "ray")
    assert local.returncode == remote.returncode == 0, remote.stderr[-2000:]
    mine, theirs = records(tmp_path / "local"), records(tmp_path / "ray")
    assert sorted(mine) == sorted(theirs) and len(theirs) == 7
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
    assert started(remote.stderr) == 7
    again = run_cmd([*base, *on_ray(cluster)], tmp_path / "ray")
    assert (again.returncode, started(again.stderr)) == (0, 0)
    two = ["tasks=[rename-symbol,fix-default-argument]", "k=3"]  # two of the seven: r0 of each is up to date
    more = run_cmd([*base, *two, *on_ray(cluster)], tmp_path / "ray")
    assert (more.returncode, started(more.stderr)) == (0, 4)
    forced = run_cmd([*base, *two, "force=true", *on_ray(cluster)], tmp_path / "ray")
    assert (forced.returncode, started(forced.stderr)) == (0, 6)


KILL_WORKER_ONCE = """
import os, sys
marker, attempts = sys.argv[1], sys.argv[2]
with open(attempts, "a") as f:
    f.write("x")
if os.path.exists(marker) and sys.argv[3] == "once":
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


def test_a_lost_worker_is_retried_and_a_failing_run_is_not(cluster: RayCluster, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    suites = make_suite(tmp_path / "suites", "faults", {
        "killed-once": ["python3", "-c", KILL_WORKER_ONCE, str(marks / "once"), str(marks / "once.n"), "once"],
        "killed-always": ["python3", "-c", KILL_WORKER_ONCE, str(marks / "always"), str(marks / "always.n"),
                          "always"],
        "fails": ["python3", "-c", COUNT_AND_FAIL, str(marks / "fails.n")]})
    result = run_cmd(["lab", "run", f"suite_dir={suites}", "suite=faults", "provider=scripted", "k=1", "yes=true",
                      "sandbox=none", "trust_local=true", "jobs=3", "executor.max_retries=1", *on_ray(cluster)],
                     tmp_path / "runs")
    found = {task: record for (task, _), record in records(tmp_path / "runs").items()}
    assert found["killed-once"]["status"] == "pass"
    assert (marks / "once.n").read_text() == "xx"  # killed, then tried again once
    assert found["killed-always"]["status"] == "error"
    assert found["killed-always"]["error"]["kind"] == "worker_lost"
    assert (marks / "always.n").read_text() == "xx"  # max_retries=1: two tries, then an infrastructure error
    assert found["fails"]["status"] == "fail"
    assert (marks / "fails.n").read_text() == "x"  # a failing run is data: never tried again
    finished = [e for e in events(result.stderr) if e.get("event") == "run_finished"]
    assert sorted(e["taskId"] for e in finished) == ["fails", "killed-always", "killed-once"]  # one record each


BLOCK_ONCE = """
import os, sys, time
fifo, done = sys.argv[1], sys.argv[2]
if os.path.exists(done):
    sys.exit(0)
with open(fifo, "w") as f:
    f.write("started\\n")
time.sleep(600)  # blocks until the cancelled run kills it (sys.argv[3] names it in ps)
"""


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


def test_ctrl_c_cancels_runs_on_the_workers_and_the_same_command_resumes(cluster: RayCluster, tmp_path: Path) -> None:
    fifo, done, token = tmp_path / "started", tmp_path / "done", f"lab-cancel-{os.getpid()}-{tmp_path.name}"
    os.mkfifo(fifo)
    suites = make_suite(tmp_path / "suites", "blocks", {
        "blocks": ["python3", "-c", BLOCK_ONCE, str(fifo), str(done), token]})
    argv = ["lab", "run", f"suite_dir={suites}", "suite=blocks", "provider=scripted", "k=1", "yes=true",
            "sandbox=none", "trust_local=true", *on_ray(cluster)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")} | {"LAB_DATA_DIR": str(tmp_path / "runs")}
    driver = subprocess.Popen([str(BIN / "lab"), *argv[1:]], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    opened = threading.Thread(target=lambda: fifo.read_text(), daemon=True)
    opened.start()
    opened.join(timeout=180)  # the verifier on a worker has started
    assert not opened.is_alive(), "the run's verifier never started"
    assert _processes_naming(token)
    driver.send_signal(signal.SIGINT)
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 130, err[-2000:]
    assert "cancelled" in err
    assert records(tmp_path / "runs") == {}  # no partial record
    assert _processes_naming(token) == []  # the verifier was killed on its worker
    done.touch()
    again = run_cmd(argv, tmp_path / "runs")
    assert again.returncode == 0, again.stderr[-2000:]
    assert [r["status"] for r in records(tmp_path / "runs").values()] == ["pass"]


def test_a_worker_with_another_lab_refuses_the_run_naming_both_digests(cluster: RayCluster, tmp_path: Path) -> None:
    other = tmp_path / "other-lab"
    shutil.copytree(ROOT / "lab", other / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "lab" / "execute" / "run.py", "a", encoding="utf-8") as source:
        source.write("\nANOTHER_HARNESS = True  # code, not a comment: comments are not in the harness digest\n")
    # Every worker of this command imports the other lab: the job's runtime_env puts it first on their path,
    # as Ray's job submission does (the driver itself runs this lab). From another directory: Ray puts the
    # driver's working directory first on its workers' path.
    job = {"runtime_env": {"env_vars": {"PYTHONPATH": str(other)}}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")} | {
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


class _CountingStub(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that answers DONE after 0.2 s and counts calls in flight."""

    lock = threading.Lock()
    now = peak = calls = 0

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length", "0")))
        cls = type(self)
        with cls.lock:
            cls.now += 1
            cls.calls += 1
            cls.peak = max(cls.peak, cls.now)
        threading.Event().wait(0.2)  # the provider's latency: calls overlap unless something caps them
        with cls.lock:
            cls.now -= 1
        body = json.dumps({"id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "DONE: nothing"}}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def counting_stub() -> Iterator[tuple[str, type[_CountingStub]]]:
    handler = type("Stub", (_CountingStub,), {"lock": threading.Lock(), "now": 0, "peak": 0, "calls": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("executor", ["ray", "local"])
def test_the_provider_cap_holds_across_the_cluster(executor: str, tmp_path: Path, request: pytest.FixtureRequest,
                                                   counting_stub: tuple[str, type[_CountingStub]],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    url, stub = counting_stub
    suites = make_suite(tmp_path / "suites", "capped", {f"t{i}": ["true"] for i in range(4)})  # trivially cheap runs
    where = on_ray(request.getfixturevalue("cluster")) if executor == "ray" else []  # local needs no cluster
    argv = ["lab", "run", f"suite_dir={suites}", "suite=capped", "provider=openai", f"provider.base_url={url}",
            f"provider.api_key_env={STUB_KEY_ENV}", "provider.max_concurrent_calls=4", "preflight=false", "k=10",
            "jobs=40", "yes=true", "sandbox=none", "trust_local=true", *where]
    if executor == "local":  # on ray the key comes from the workers' own environment
        monkeypatch.setenv(STUB_KEY_ENV, "stub-key-not-a-secret")
    result = run_cmd(argv, tmp_path / "runs")
    assert result.returncode == 0, result.stderr[-2000:]
    assert stub.calls == 40
    assert stub.peak == 4  # reached, never exceeded


def test_each_worker_sandboxes_with_its_own_bwrap_or_fails_the_run_as_locally(cluster: RayCluster,
                                                                              tmp_path: Path) -> None:
    from lab.errors import SandboxError
    from lab.execute.sandboxing import open_sandbox

    try:  # what sandbox=bwrap gives on this machine, whose bwrap the local nodes share
        local_error: str | None = None if open_sandbox("bwrap").name == "bwrap" else "?"
    except SandboxError as exc:
        local_error = str(exc)
    result = run_cmd(["lab", "run", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]", "sandbox=bwrap",
                      *on_ray(cluster)], tmp_path / "runs")
    [record] = records(tmp_path / "runs").values()
    assert record["inputs"]["sandbox"] == "bwrap"
    if local_error is None:
        assert (result.returncode, record["status"], record["sandbox"]) == (0, "pass", "bwrap"), record["error"]
    else:  # the worker has none: the run fails with the one line sandbox=bwrap gives locally
        assert record["error"] == {"kind": "sandbox", "message": local_error}
        assert local_error in result.stdout
