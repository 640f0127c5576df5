"""A command agent meets an outage or a setup error, end to end through `lab run agent=reference`.

A loopback provider answers HTTP 503 on every call: the run is an infrastructure error (``provider``,
cause ``server``), not the agent's failure, and the next command executes it again. An agent that posts
to ``/v1/v1/chat/completions`` never reaches the model: an error naming the path (docs/faults.md).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.lab_process import command_env, run_script
from tests.helpers.openai_stub import ScriptedStub, Turn
from tests.helpers.schemas import assert_valid

pytestmark = pytest.mark.slow

TASK = "rename-symbol"


class Outage:
    """503 on every call (``retry-after-ms: 0``: no waits) until ``up`` is set, then a scripted answer."""

    def __init__(self, server: LocalHTTPServer) -> None:
        self.up = threading.Event()
        self.answer = ScriptedStub([Turn(text="DONE: renamed.")])
        self.calls = 0
        server.handler = self.handle

    def handle(self, request: Request, response: Response) -> None:
        self.calls += 1
        if self.up.is_set():
            self.answer(request, response)
        else:
            response.send_json(503, {"error": {"message": "service unavailable", "type": "server_error"}},
                               headers={"retry-after-ms": "0"})


@pytest.fixture
def outage() -> Iterator[tuple[LocalHTTPServer, Outage]]:
    with LocalHTTPServer() as server:
        yield server, Outage(server)
        assert not server.errors


def lab_run(data_dir: Path, server: LocalHTTPServer, *more: str) -> subprocess.CompletedProcess[str]:
    env = command_env()
    env.update(LAB_DATA_DIR=str(data_dir), LAB_TEST_KEY="sk-test-outage-0123456789")
    args = ["run", "suite=smoke-coding", "agent=reference", "provider=openai", "preflight=false",
            f"provider.base_url={server.url}/v1", "provider.api_key_env=LAB_TEST_KEY", "provider.max_retries=1",
            f"tasks=[{TASK}]", "k=1", "trust_local=true", *more]
    return run_script(["lab", *args], env=env)


def records(data_dir: Path) -> list[dict[str, object]]:
    found = [json.loads(p.read_text()) for p in sorted(data_dir.glob("*/*/runs/*/*.json"))]
    for record in found:
        assert_valid("run-record", record)
    return found


def test_an_outage_is_an_infrastructure_error_and_runs_again(tmp_path: Path,
                                                             outage: tuple[LocalHTTPServer, Outage]) -> None:
    server, stub = outage
    first = lab_run(tmp_path, server)

    assert first.returncode == 1, first.stdout + first.stderr  # infrastructure errors: exit 1
    assert "Traceback" not in first.stdout + first.stderr
    [record] = records(tmp_path)
    error = record["error"]
    assert record["status"] == "error" and isinstance(error, dict)
    assert (error["kind"], error["cause"], error["status"]) == ("provider", "server", 503)
    assert "HTTP 503: service unavailable" in error["message"] and "after 2 attempts" in error["message"]
    gateway = record["gateway"]
    assert isinstance(gateway, dict) and gateway["retries"] == 1 and gateway["upstreamErrors"] == 1
    assert stub.calls == 2  # one call, retried once; the agent was ended at the persisting fault
    report = json.loads(next(tmp_path.glob("*/*/reports/*/report.json")).read_text())
    assert report["summary"]["errors"] == 1

    stub.up.set()
    second = lab_run(tmp_path, server)

    assert second.returncode == 0, second.stdout + second.stderr
    assert "up to date" not in second.stdout
    [again] = records(tmp_path)
    assert again["status"] in ("pass", "fail") and again["error"] is None
    usage = again["usage"]
    assert isinstance(usage, dict)
    assert (usage["inputTokens"], usage["outputTokens"], usage["cachedPartial"]) == (10, 5, False)


def test_an_agent_that_never_reaches_the_model_is_an_error_naming_the_path(
        tmp_path: Path, outage: tuple[LocalHTTPServer, Outage]) -> None:
    server, stub = outage
    stub.up.set()
    argv = ('agent.command.argv=["{python}","-s","{agents_dir}/reference/agent.py","--model","{model}",'
            '"--base-url","{base_url}/v1","--prompt-file","{prompt_file}"]')

    result = lab_run(tmp_path, server, argv)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    [record] = records(tmp_path)
    error = record["error"]
    assert record["status"] == "error" and isinstance(error, dict) and error["kind"] == "agent_setup"
    assert "agent reference never reached the model" in error["message"]
    assert "POST /v1/v1/chat/completions (404 not_found)" in error["message"]
    assert stub.calls == 0
