"""Command-agent runs end to end with a probe agent: replay normalisation, budgets, key hygiene.

The probe (tests/helpers/probe_agent.py, standard library only) is copied into
a temporary copy of the smoke-coding suite and run as a command agent with
``provider=scripted`` behind the gateway (no network).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from lab.build.graph import prepare
from lab.execute.run import execute_run
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.lab_process import ROOT, run_cmd
from tests.helpers.openai_stub import ScriptedStub, SlowStub, Turn
from tests.helpers.sandboxed import require_bwrap
from tests.helpers.schemas import assert_valid

# One worker builds this module's shared fixture (scope="module") once, instead of each worker that runs one of its tests.
pytestmark = pytest.mark.xdist_group("command-agent-runs")

TASK = "fix-default-argument"
PROBE = Path(__file__).resolve().parents[1] / "helpers" / "probe_agent.py"
REAL_KEY = "sk-proj-realkey0123456789abcdefABCDEF0123456789"


def probe_suite(tmp_path: Path, verifiers: tuple[dict[str, Any], ...] = (), **budget: int) -> Path:
    """A copy of smoke-coding whose task fixture holds the probe and whose script answers 'done'
    (``verifiers`` added to the task's, ``budget`` over its budget)."""
    suites = tmp_path / "suites"
    suite = suites / "smoke-coding"
    shutil.copytree(ROOT / "suites" / "smoke-coding", suite)
    shutil.copy(PROBE, suite / "fixtures" / TASK / "probe_agent.py")
    script = suite / "scripts" / "agents" / "probe" / f"{TASK}.json"
    script.parent.mkdir(parents=True)
    script.write_text(json.dumps({"schemaVersion": 1, "taskId": TASK, "turns": [{"content": "done"}]}))
    if budget or verifiers:
        doc = json.loads((suite / "suite.json").read_text())
        task = next(t for t in doc["tasks"] if t["id"] == TASK)
        task["budget"].update(budget)
        task["verifiers"] += verifiers
        (suite / "suite.json").write_text(json.dumps(doc, indent=2))
    return suites


def overrides(tmp_path: Path, suites: Path, probe_mode: str, *extra: str) -> list[str]:
    return [f"suite_dir={suites}", "suite=smoke-coding", "provider=scripted", "agent=reference",
            "agent.name=probe", f'agent.command.argv=["{{python}}","probe_agent.py","{probe_mode}","{{model}}"]',
            "agent.command.ignore=[probe_agent.py]", "agent.command.grace_ms=300", f"tasks=[{TASK}]",
            f"cassette_dir={tmp_path / 'cassettes'}", "keep=true", "yes=true", *extra]


def run_once(argv: list[str], sandbox: Any = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    # The key sits in ``env`` only (not the process's environment): no preflight against it.
    backend = [f"sandbox={sandbox.name}"] if sandbox is not None else []
    prep = prepare([*argv, "preflight=false", *backend])
    if env is not None:
        prep.ctx.env = env
    record = execute_run(prep.ctx, prep.specs[0])
    assert_valid("run-record", record)
    return record


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie (dead, waiting for a parent that may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """The probe suite and one recorded run of its 'fresh' mode (a new uuid and timestamp in every request),
    shared by the tests that replay that recording: (directory of the suites and cassettes, suites, record)."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    suites = probe_suite(tmp_path)
    return tmp_path, suites, run_once(overrides(tmp_path, suites, "fresh", "mode=record"))


def test_fresh_uuid_and_timestamp_still_match_on_replay(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tmp_path, suites, record = recorded
    # The probe exits 0 without fixing the task: a claimed success the verifiers refute (a false positive).
    assert (record["status"], record["claim"]) == ("fail", "success"), record["error"]
    assert record["error"] is None
    cassette = (tmp_path / "cassettes" / "smoke-coding" / "agents" / "probe" / f"{TASK}.jsonl").read_text()
    assert "<uuid>" in cassette and "<datetime>" in cassette  # the volatile values were there, masked
    assert '"metadata"' not in cassette  # a dropped field
    for _ in range(2):
        replayed = run_once(overrides(tmp_path, suites, "fresh", "mode=replay"))
        assert replayed["error"] is None and replayed["divergence"] is None
        assert replayed["status"] == record["status"]
        assert replayed["gateway"]["calls"] == 1


def test_a_field_that_matters_diverges_and_names_it(recorded: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    cassettes, suites, record = recorded
    assert record["error"] is None
    argv = ["doit", "eval", "k=1", "mode=replay", "+agent.command.env.PROBE_TEMPERATURE='0.5'",
            *overrides(cassettes, suites, "fresh")]
    result = run_cmd(argv, tmp_path / "runs")
    assert result.returncode == 2, result.stdout + result.stderr
    record = json.loads(next((tmp_path / "runs").glob(f"smoke-coding/*/runs/{TASK}/*.json")).read_text())
    assert record["error"]["kind"] == "replay_divergence"
    assert record["divergence"]["field"] == "temperature"
    assert "temperature" in result.stdout + result.stderr


def test_the_real_key_reaches_neither_the_agent_nor_the_data_dir(tmp_path: Path) -> None:
    backend = require_bwrap()
    suites = probe_suite(tmp_path)
    data_dir = Path(os.environ["LAB_DATA_DIR"])
    with LocalHTTPServer() as server:
        stub = ScriptedStub([Turn(text=f"done (echo of {REAL_KEY})")])
        server.handler = stub
        argv = overrides(tmp_path, suites, "leak", "mode=record", "provider=openai", "provider.model=stub-model",
                         f"provider.base_url={server.url}/v1", "provider.api_key_env=LAB_TEST_REAL_KEY",
                         f"cassette_dir={data_dir / 'cassettes'}")
        record = run_once(argv, sandbox=backend, env={**os.environ, "LAB_TEST_REAL_KEY": REAL_KEY})
        assert [r.headers.get("authorization") for r in server.requests] == [f"Bearer {REAL_KEY}"]
    assert record["executor"]["exitCode"] == 0, record["executor"]
    seen = (Path(record["workspace"]) / "probe-out.txt").read_text()
    # It looked at its own environment and every /proc/*/environ it could read (bwrap's pid 1 is
    # hidden), and found the run token.
    assert "OPENAI_API_KEY=" in seen and "/proc/self/environ" in seen and "/proc/1/environ" not in seen
    assert REAL_KEY not in seen
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files)  # the cassette was written (with the echo redacted)
    for path in files:
        assert REAL_KEY.encode() not in path.read_bytes(), path


def test_a_stream_the_agent_hangs_up_on_leaves_the_run_usage_unreported_and_replays_so(tmp_path: Path) -> None:
    suites = probe_suite(tmp_path)
    release = threading.Event()
    with LocalHTTPServer() as server:
        server.handler = stub = SlowStub(release)
        argv = overrides(tmp_path, suites, "abandon", "provider=openai", "provider.model=stub-model",
                         f"provider.base_url={server.url}/v1", "provider.api_key_env=LAB_TEST_REAL_KEY",
                         "sandbox=none", "trust_local=true")
        try:
            record = run_once([*argv, "mode=record"], env={**os.environ, "LAB_TEST_REAL_KEY": REAL_KEY})
        finally:
            release.set()
    assert stub.hung_up.is_set() and len(server.requests) == 2
    replayed = run_once([*argv, "mode=replay"])

    for run in (record, replayed):
        gateway = run["gateway"]
        assert (gateway["calls"], gateway["callsWithUsage"], gateway["callsWithoutUsage"],
                gateway.get("abandonedCalls")) == (2, 1, 1, 1), gateway
        assert run["usage"] is None and run["error"] is None and run["status"] == "fail"
        [incident] = run["incidents"]
        assert incident["kind"] == "usage_unreported" and "1 abandoned" in incident["detail"]


def test_the_verifiers_run_in_the_eval_sandbox_as_for_the_built_in_agent(tmp_path: Path) -> None:
    backend = require_bwrap()
    # Inside the sandbox: the task copy at /workspace, and nothing of the host's temp tree.
    inside = {"id": "inside", "kind": "command", "timeoutMs": 30000, "expectExit": 0,
              "argv": ["sh", "-c", f'test "$(pwd)" = /workspace && test ! -e {tmp_path}']}
    suites = probe_suite(tmp_path, verifiers=(inside,))
    record = run_once(overrides(tmp_path, suites, "fresh", "mode=record"), sandbox=backend)
    assert record["sandbox"] == "bwrap"
    assert {v["id"]: v["status"] for v in record["verifiers"]}["inside"] == "pass", record["verifiers"]


def test_a_looping_agent_is_ended_by_max_turns_and_the_report_says_budget_exceeded(tmp_path: Path) -> None:
    suites = probe_suite(tmp_path, maxTurns=3)
    # On the host (sandbox=none): the lab itself must leave nothing running, without a pid namespace.
    result = run_cmd(["doit", "eval", "k=1", "mode=live", "sandbox=none", "trust_local=true",
                      *overrides(tmp_path, suites, "loop")], tmp_path / "runs")
    assert result.returncode in (0, 1), result.stdout + result.stderr
    record = json.loads(next((tmp_path / "runs").glob(f"smoke-coding/*/runs/{TASK}/*.json")).read_text())
    assert record["status"] == "budget_exceeded" and record["budgetExceeded"] == "maxTurns"
    assert record["gateway"]["calls"] == 3 and record["executor"]["endedByLab"] == "maxTurns"
    report = json.loads(next((tmp_path / "runs").glob("smoke-coding/*/reports/*/report.json")).read_text())
    assert report["summary"]["budgetExceeded"] == 1 and report["summary"]["falsePositives"] == 0
    pid = int((Path(record["workspace"]) / "probe-pids.txt").read_text())
    assert gone(pid)


def test_an_agent_that_ignores_sigterm_is_ended_by_max_wall_ms(tmp_path: Path) -> None:
    suites = probe_suite(tmp_path, maxWallMs=1500, maxTurns=100)
    record = run_once(overrides(tmp_path, suites, "hang", "mode=live", "sandbox=none", "trust_local=true"))
    assert record["status"] == "budget_exceeded" and record["budgetExceeded"] == "maxWallMs"
    assert record["executor"]["endedByLab"] == "maxWallMs" and record["executor"]["signal"] == "SIGKILL"
    assert record["claim"] == "none"
    pids = [int(p) for p in (Path(record["workspace"]) / "probe-pids.txt").read_text().split()]
    assert len(pids) == 2 and all(gone(pid) for pid in pids)


@pytest.mark.parametrize(("extra", "expected"), [
    (["agent=codex"], "agent codex: not installed (run: lab agents install codex)"),
    (["agent=reference", 'agent.command.argv=["{python}","{nope}"]'], "unknown placeholder {nope}"),
    (["agent=reference", "agent.version=null"], "agent.version: agent reference needs a pinned version"),
])
def test_a_bad_or_missing_agent_is_one_line_before_any_run(tmp_path: Path, extra: list[str], expected: str) -> None:
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "provider=scripted", "k=1", *extra], tmp_path / "runs")
    assert result.returncode == 1, result.stdout + result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert not list((tmp_path / "runs").glob("*/*/runs/*/*.json"))
