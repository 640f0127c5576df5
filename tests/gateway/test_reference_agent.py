"""The reference agent (on the openai SDK) solves a tiny task through the gateway.

Its loop runs in process (``agent.main``) against a real gateway and a real stub provider on loopback, in
the task's working directory with the environment it gets in a sandbox; what only a process shows (the
answer written whole through a pipe before ``os._exit``, the exit status) runs the program itself, forked
with the SDK already imported (tests/helpers/forkserver.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.gateway import Gateway, GatewayBudget, LiveUpstream, RecordedCall, RecordingUpstream, ReplayUpstream
from lab.replay.matching import Matcher, Recording
from lab.replay.normalise import RequestNormaliser
from tests.helpers import forkserver
from tests.helpers.gateway_support import REAL_KEY, TOKEN, Halts
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.lab_process import FRESH, ROOT
from tests.helpers.openai_stub import ScriptedStub, Turn

# The in-process tests import the agent (and with it the openai SDK, about a second) when they run, all
# on one test worker, not when each worker collects this module.
pytestmark = pytest.mark.xdist_group("reference-agent")

MakeGateway = Callable[..., Gateway]
RunAgent = Callable[..., "subprocess.CompletedProcess[str]"]
AGENT = ROOT / "lab" / "agents" / "reference" / "agent.py"
SCRIPT = [Turn(calls=(("write_file", {"path": "out/greeting.txt", "content": "hello\n"}),)),
          Turn(calls=(("shell", {"command": "cat out/greeting.txt"}),)),
          Turn(text="Wrote out/greeting.txt.")]


def agent_env(gateway: Gateway, workspace: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(workspace), "OPENAI_BASE_URL": str(gateway.address.base_url),
            "OPENAI_API_KEY": TOKEN}


@pytest.fixture
def run_agent(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> RunAgent:
    """``agent.main`` in the workspace with the agent's environment; its exit status and output as a process's."""

    def run(gateway: Gateway, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
        argv = ["--model", "stub-model", "--prompt", "greet", *args]
        with monkeypatch.context() as patch:
            # What the SDK and its HTTP client read besides the two variables the agent is given.
            for name in [n for n in os.environ if n.startswith("OPENAI_") or n.lower().endswith("_proxy")]:
                patch.delenv(name)
            for name, value in agent_env(gateway, workspace).items():
                patch.setenv(name, value)
            patch.chdir(workspace)  # the shell and write_file tools work below the working directory
            capsys.readouterr()
            from lab.agents.reference import agent

            code = agent.main(argv)
            out, err = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)

    return run


def run_program(env: dict[str, str], workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The agent as a program: its own process with pipes for stdout and stderr, ended by ``exit_now``."""
    argv = [str(AGENT), "--model", "stub-model", "--prompt", "greet", *args]
    # The interpreter's own settings, except PYTHONUNBUFFERED: stdout stays block-buffered, as in a sandbox.
    env = {**{k: v for k, v in os.environ.items() if k.startswith("PYTHON") and k != "PYTHONUNBUFFERED"}, **env}
    if FRESH["processes"]:
        return subprocess.run([sys.executable, *argv], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, check=False)
    return forkserver.run(argv, env=env, cwd=workspace, timeout=120)


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_it_writes_the_file_and_exits_0(make_gateway: MakeGateway, provider: LocalHTTPServer, tmp_path: Path,
                                        run_agent: RunAgent, api: str, stream: str) -> None:
    stub = ScriptedStub(SCRIPT)
    provider.handler = stub

    result = run_agent(make_gateway(), tmp_path, "--api", api, stream)

    assert (result.returncode, result.stdout) == (0, "Wrote out/greeting.txt.\n"), result.stderr
    assert (tmp_path / "out/greeting.txt").read_text() == "hello\n"
    last = stub.bodies[-1]
    assert last["stream"] is (stream == "--stream") if "stream" in last else stream == "--no-stream"
    tool_output = last["messages"][-1]["content"] if api == "chat" else last["input"][-1]["output"]
    assert tool_output == "exit code: 0\nhello\n"


@pytest.mark.slow
def test_a_long_answer_is_written_whole_before_the_quick_exit(make_gateway: MakeGateway,
                                                             provider: LocalHTTPServer, tmp_path: Path) -> None:
    # The agent ends with os._exit once its output is flushed: nothing buffered may be lost on a pipe
    # (ten times a pipe's 64 KiB buffer; one JSON body, as 40k streamed deltas would only add time).
    answer = "".join(f"line {n} of a long final answer\n" for n in range(20000))
    provider.handler = ScriptedStub([Turn(text=answer)])

    result = run_program(agent_env(make_gateway(), tmp_path), tmp_path, "--no-stream")

    assert (result.returncode, result.stdout) == (0, answer + "\n"), result.stderr


def test_its_exit_status_and_message_survive_the_quick_exit(tmp_path: Path) -> None:
    # main's status reaches the parent through exit_now, and stderr is flushed before the quick exit.
    result = run_program({"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, tmp_path)

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "reference agent: OPENAI_API_KEY is not set\n"


def test_a_refused_call_ends_it_with_a_nonzero_exit(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                   halts: Halts, tmp_path: Path, run_agent: RunAgent) -> None:
    provider.handler = ScriptedStub([Turn(calls=(("shell", {"command": "true"}),))])  # never finishes

    result = run_agent(make_gateway(budget=GatewayBudget(max_turns=3)), tmp_path, "--api", "responses")

    assert result.returncode == 1
    assert "budget_exceeded" in result.stderr
    assert [h.reason for h in halts.calls] == ["maxTurns"]


def test_no_final_answer_within_max_turns_exits_3(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                 tmp_path: Path, run_agent: RunAgent) -> None:
    provider.handler = ScriptedStub([Turn(calls=(("shell", {"command": "true"}),))])

    result = run_agent(make_gateway(), tmp_path, "--max-turns", "2")

    assert result.returncode == 3


def test_a_recorded_run_replays_twice_without_the_provider(make_gateway: MakeGateway, provider: LocalHTTPServer,
                                                          tmp_path: Path, run_agent: RunAgent) -> None:
    provider.handler = ScriptedStub(SCRIPT)
    recorded: list[RecordedCall] = []
    normalise = RequestNormaliser()
    live = make_gateway(RecordingUpstream(LiveUpstream(provider.url + "/v1", REAL_KEY), normalise, recorded.append))
    first = run_agent(live, tmp_path / "live", "--api", "responses")
    provider.reset()

    outcomes = []
    for n in range(2):
        matcher = Matcher([Recording(c.index, c.api, c.request, c.exchange) for c in recorded])
        result = run_agent(make_gateway(ReplayUpstream(matcher, normalise)), tmp_path / f"replay{n}",
                           "--api", "responses")
        matcher.finish()
        outcomes.append((result.returncode, result.stdout, (tmp_path / f"replay{n}/out/greeting.txt").read_text()))

    assert outcomes == [(first.returncode, first.stdout, "hello\n")] * 2
    assert provider.requests == []


@pytest.fixture(autouse=True)
def workspaces(tmp_path: Path) -> None:
    for name in ("live", "replay0", "replay1"):
        (tmp_path / name).mkdir()


def raw_sse(path: str) -> Callable[..., None]:
    body = (Path(__file__).resolve().parents[1] / "providers" / "fixtures" / path).read_bytes()
    return lambda request, response: (response.start(200, {"Content-Type": "text/event-stream"}),
                                      response.write(body), response.end())


def test_the_answer_comes_from_the_streamed_items_when_completed_carries_none(
        make_gateway: MakeGateway, provider: LocalHTTPServer, tmp_path: Path, run_agent: RunAgent) -> None:
    # response.completed with "output": [] after the text arrived in response.output_item.done
    provider.handler = raw_sse("responses_empty_output.sse")

    result = run_agent(make_gateway(), tmp_path, "--api", "responses", "--stream")

    assert (result.returncode, result.stdout) == (0, "All tests pass.\n"), result.stderr


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_empty_final_answer_is_never_claimed_and_is_an_incident(make_gateway: MakeGateway,
                                                                   provider: LocalHTTPServer, tmp_path: Path,
                                                                   run_agent: RunAgent, api: str) -> None:
    from lab.execute.gateway_verdict import gateway_incidents

    provider.handler = ScriptedStub([Turn(text="")])
    gateway = make_gateway()

    result = run_agent(gateway, tmp_path, "--api", api, "--stream")

    assert (result.returncode, result.stdout) == (1, "")  # exit 1: no claim of success
    assert "final answer is empty" in result.stderr
    assert gateway.stats.empty_answers == 1
    assert [i["kind"] for i in gateway_incidents(gateway.stats)] == ["empty_response"]
