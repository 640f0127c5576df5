"""A local Ray cluster of two nodes for the executor=ray tests, and the small suites they run.

Each node advertises its own ``lab_run`` slots and has its own temp dir,
data dir and cache dir (``env_vars`` of its raylet, inherited by its
workers), so a test can show the workers never saw the driver's data dir.
Worker processes get the stub provider's key from their node's environment.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

STUB_KEY_ENV = "STUB_PROVIDER_KEY"
STUB_KEY = "stub-key-not-a-secret"
SLOTS_PER_NODE = 4
MIN_FREE_GIB = 3.0
# What a test node needs and no more: runs take no CPU resource (only lab_run slots), so one CPU; no
# dashboard; no log monitor (the tests read the lab's output, not the workers' logs); no autoscaler
# monitor on the head (a fixed cluster: about a second of CPU saved).
LEAN: dict[str, Any] = {"num_cpus": 1, "include_dashboard": False, "include_log_monitor": False}
HEAD: dict[str, Any] = {**LEAN, "no_monitor": True}


@dataclass
class RayCluster:
    """The running cluster: its address, node ids and each node's own directories."""

    address: str
    cluster: Any
    node_dirs: dict[str, Path] = field(default_factory=dict)  # node id -> the node's own root dir
    node_tmps: dict[str, Path] = field(default_factory=dict)  # node id -> the node's TMPDIR


def _node_env(root: Path, extra: dict[str, str]) -> dict[str, str]:
    for sub in ("data", "cache"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    # The node's own temp dir, where its workers copy tasks: outside pytest's private (0700) tree,
    # so the bwrap sandbox user (65534) can reach it, as in any real node's /tmp.
    tmp = Path(tempfile.mkdtemp(prefix=f"lab-ray-{root.name}-"))
    tmp.chmod(0o711)
    atexit.register(shutil.rmtree, tmp, True)
    return {"TMPDIR": str(tmp), "LAB_DATA_DIR": str(root / "data"), "LAB_CACHE_DIR": str(root / "cache"),
            STUB_KEY_ENV: STUB_KEY, "RAY_USAGE_STATS_ENABLED": "0", **extra}


def free_gib() -> float:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        fields = dict(line.split(":", 1) for line in meminfo)
    return int(fields["MemAvailable"].split()[0]) / 2**20


def start_cluster(root: Path) -> Iterator[RayCluster]:
    """Two nodes of ``SLOTS_PER_NODE`` ``lab_run`` slots each; shut down afterwards.

    Without Ray (or with too little free memory) the tests are skipped, except under CI,
    where they must run.
    """
    ci = os.environ.get("CI") == "true"
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        if ci:
            pytest.fail("ray is not installed: make installs the [ray] extra for the tests")
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    if free_gib() < MIN_FREE_GIB:
        message = f"a two-node Ray cluster needs about {MIN_FREE_GIB} GiB free; {free_gib():.1f} GiB are"
        pytest.fail(message) if ci else pytest.skip(message)
    head_root, other_root = root / "node-a", root / "node-b"
    # A loaded machine (2 cores shared by the whole suite) starts a node's agents slowly; Ray's
    # default wait for them (30 s) then kills the raylet. Read by the raylets at start.
    saved = os.environ.get("RAY_agent_register_timeout_ms")
    os.environ["RAY_agent_register_timeout_ms"] = "180000"
    cluster, other, tmps = _two_nodes(Cluster, head_root, other_root)
    try:
        yield RayCluster(address=cluster.address, cluster=cluster,
                         node_dirs={cluster.head_node.node_id: head_root, other.node_id: other_root},
                         node_tmps={cluster.head_node.node_id: tmps[0], other.node_id: tmps[1]})
    finally:
        cluster.shutdown()
        if saved is None:
            os.environ.pop("RAY_agent_register_timeout_ms", None)
        else:
            os.environ["RAY_agent_register_timeout_ms"] = saved


def _two_nodes(cluster_type: Any, head_root: Path, other_root: Path,
               tries: int = 2) -> tuple[Any, Any, tuple[Path, Path]]:
    """Start the head and a second node. Ray gives a node 30 s to register (not configurable); on a
    loaded machine that can pass, so a failed start is tried once more from scratch."""
    for attempt in range(tries):
        cluster = cluster_type(shutdown_at_exit=True)
        try:
            head_env, other_env = _node_env(head_root, {}), _node_env(other_root, {})
            cluster.add_node(resources={"lab_run": SLOTS_PER_NODE}, env_vars=head_env, **HEAD)
            other = cluster.add_node(resources={"lab_run": SLOTS_PER_NODE}, env_vars=other_env, **LEAN)
            cluster.wait_for_nodes()
            return cluster, other, (Path(head_env["TMPDIR"]), Path(other_env["TMPDIR"]))
        except Exception:  # Ray's own "node timed out during startup"  # noqa: BLE001
            cluster.shutdown()
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


TASK_TEMPLATE: dict[str, Any] = {
    "budget": {"maxTurns": 4, "maxWallMs": 600000, "maxTokens": 200000, "maxToolCalls": 10},
    "policy": {"mode": "auto", "allow": ["write", "process"], "readOnly": False}, "tags": [], "fixtureGit": False,
}


def make_suite(root: Path, suite_id: str, verifiers: dict[str, list[str]]) -> Path:
    """A suite of one task per ``verifiers`` entry (task id -> the argv of its one command verifier).

    Each task's agent answers at once (the scripted provider's script, or any
    provider that says DONE); the verifier decides the status.
    """
    suite = root / suite_id
    tasks = []
    for task_id, argv in verifiers.items():
        fixture = suite / "fixtures" / task_id
        fixture.mkdir(parents=True)
        (fixture / "README.md").write_text(f"task {task_id}\n", encoding="utf-8")
        (suite / "scripts").mkdir(exist_ok=True)
        (suite / "scripts" / f"{task_id}.json").write_text(json.dumps(
            {"schemaVersion": 1, "taskId": task_id, "turns": [{"content": "DONE: nothing to change"}]}), encoding="utf-8")
        tasks.append({"id": task_id, "prompt": f"Say DONE ({task_id}).", "fixture": f"fixtures/{task_id}",
                      **TASK_TEMPLATE, "verifiers": [{"id": "check", "kind": "command", "argv": argv,
                                                      "timeoutMs": 600000, "expectExit": 0}]})
    (suite / "suite.json").write_text(json.dumps({
        "schemaVersion": 1, "suiteId": suite_id, "suiteVersion": "1.0.0", "description": "executor=ray test suite",
        "tasks": tasks}, indent=2), encoding="utf-8")
    return root


def events(stderr: str) -> list[dict[str, Any]]:
    """The lifecycle events a ``progress=true`` command printed on stderr."""
    found = []
    for line in stderr.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def started(stderr: str) -> int:
    """How many runs a command dispatched (``run_started`` events)."""
    return sum(1 for event in events(stderr) if event.get("event") == "run_started")
