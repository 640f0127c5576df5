"""Opt-in (``pytest --run-agents``): real codex, aider and mini-swe-agent under the lab.

Each agent is installed with ``lab agents install`` (into ``$LAB_AGENTS_DIR``
when set, so installations are reused across sessions; else a temp dir),
solves smoke-coding's fix-default-argument live against a loopback stub
provider that plays a scripted solution in the agent's own tool dialect, is
recorded, then replays twice with identical verdicts and no provider traffic.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.http_server import LocalHTTPServer, closed_port_url
from tests.helpers.lab_process import BIN, ROOT, command_env
from tests.helpers.openai_stub import ScriptedStub, Turn

pytestmark = [pytest.mark.agents, pytest.mark.slow]

TASK = "fix-default-argument"
FIX = "sed -i 's/page_size=25/page_size=10/' pager.py"
FIXED = (ROOT / "suites" / "smoke-coding" / "fixtures" / TASK / "pager.py").read_text().replace(
    "def paginate(items, page_size=25):", "def paginate(items, page_size=10):")
SOLUTIONS = {
    "codex": [Turn(calls=(("exec_command", {"cmd": FIX}),)), Turn(text="Done: page_size defaults to 10.")],
    "mini-swe-agent": [Turn(calls=(("bash", {"command": FIX}),)),
                       Turn(calls=(("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),))],
    "aider": [Turn(text="pager.py\n```python\n" + FIXED + "```\n")],  # aider's "whole" edit format
}


@pytest.fixture(scope="session")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(os.environ.get("LAB_AGENTS_DIR") or tmp_path_factory.mktemp("agents"))


def lab(argv: list[str], data_dir: Path, agents_dir: Path, timeout_s: float = 1800) -> subprocess.CompletedProcess[str]:
    env = command_env()
    env.update(LAB_DATA_DIR=str(data_dir), LAB_AGENTS_DIR=str(agents_dir), LAB_TEST_STUB_KEY="sk-stub-key")
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)


def verdict(data_dir: Path) -> list[str]:
    record = json.loads(next(data_dir.glob(f"smoke-coding/*/runs/{TASK}/*.json")).read_text())
    return [record["status"], *[v["status"] for v in record["verifiers"]]]


@pytest.mark.parametrize("agent", sorted(SOLUTIONS))
def test_real_agent_live_record_and_replay(tmp_path: Path, agents_dir: Path, agent: str) -> None:
    installed = lab(["lab", "agents", "install", agent], tmp_path / "install", agents_dir)
    assert installed.returncode == 0, installed.stderr[-2000:]
    cassettes = tmp_path / "cassettes"
    with LocalHTTPServer() as server:
        server.handler = ScriptedStub(SOLUTIONS[agent])
        base = ["suite=smoke-coding", f"agent={agent}", "provider=openai", "provider.model=stub-model",
                f"provider.base_url={server.url}/v1", "provider.api_key_env=LAB_TEST_STUB_KEY", f"tasks=[{TASK}]",
                "k=1", f"cassette_dir={cassettes}", "preflight=false"]  # the stub plays only the agent's turns
        live = lab(["doit", "eval", "mode=live", *base], tmp_path / "live", agents_dir)
        assert live.returncode == 0 and verdict(tmp_path / "live")[0] == "pass", live.stdout + live.stderr
        server.handler = ScriptedStub(SOLUTIONS[agent])
        recorded = lab(["doit", "record", *base], tmp_path / "record", agents_dir)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        assert verdict(tmp_path / "record")[0] == "pass"
        before = len(server.requests)
        replay = [*base, "mode=replay", f"provider.base_url={closed_port_url()}/v1"]
        for i in range(2):
            replayed = lab(["doit", "eval", *replay], tmp_path / f"replay{i}", agents_dir)
            assert replayed.returncode == 0, replayed.stdout + replayed.stderr
            assert verdict(tmp_path / f"replay{i}") == verdict(tmp_path / "record")
        assert len(server.requests) == before  # replay never reached the provider
