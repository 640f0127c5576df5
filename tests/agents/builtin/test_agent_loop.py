"""lab.agents.builtin.loop: whole runs with the scripted provider in real workspaces."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import PY, TASK, Recording, answer, call, calls, incidents, of_type, run, scripted

from lab.agents.builtin.loop import DEFAULT_SYSTEM_PROMPT, AgentSettings
from lab.agents.builtin.result import claim_of
from lab.errors import CassetteMiss, ProviderRateLimited
from lab.providers.base import Usage

FIXED = "def total(n):\n    return sum(range(1, n + 1))\n"
EDIT = {"path": "calc.py", "sha256": "@sha256:calc.py", "old": "range(n)", "new": "range(1, n + 1)"}


@pytest.mark.parametrize("stream", [False, True])
def test_happy_path_reads_edits_verifies_and_claims_success(workspace: Path, stream: bool) -> None:
    provider = scripted(call("read_file", path="calc.py"), call("edit_file", **EDIT),
                        call("run_command", argv=[PY, "test_calc.py"]),
                        answer("DONE: fixed the off-by-one in total()."), stream=stream)
    result = run(workspace, provider)
    assert (workspace / "calc.py").read_text() == FIXED
    assert (result.stop_reason, result.claim, result.turns, result.tool_calls) == (
        "answered", "success", 4, 3)
    assert result.final_message == "DONE: fixed the off-by-one in total()."
    assert [e["type"] for e in result.events] == [
        "model_call", "tool_call", "model_call", "tool_call", "model_call", "tool_call",
        "model_call"]
    assert [e["seq"] for e in result.events] == list(range(7))
    tools = of_type(result, "tool_call")
    assert [(t["tool"], t["effect"], t["outcome"], t["error"]) for t in tools] == [
        ("read_file", "read", "ok", None), ("edit_file", "write", "ok", None),
        ("run_command", "process", "ok", None)]
    assert tools[0].pop("durationMs") >= 0
    assert tools[0] == {"seq": 1, "type": "tool_call", "turn": 1, "id": "call_0_0",
                        "tool": "read_file", "arguments": {"path": "calc.py"},
                        "effect": "read", "outcome": "ok", "error": None}


def test_usage_is_the_sum_of_main_calls(workspace: Path) -> None:
    result = run(workspace, scripted(call("list_dir"), answer("DONE: looked")))
    reported = [e["usage"] for e in of_type(result, "model_call")]
    assert result.usage == Usage(sum(u["inputTokens"] for u in reported),
                                 sum(u["outputTokens"] for u in reported), None)
    assert (result.usage_turns_reported, result.cached_turns_reported) == (2, 0)
    assert result.compaction_usage is None and result.compactions == 0


def test_model_call_event_shape(workspace: Path) -> None:
    result = run(workspace, scripted(answer("DONE: nothing to do")))
    event = of_type(result, "model_call")[0]
    assert set(event) == {"seq", "type", "purpose", "turn", "latencyMs", "finishReason",
                          "toolCalls", "usage"}
    assert (event["purpose"], event["turn"], event["finishReason"], event["toolCalls"]) == (
        "main", 1, "stop", 0)
    assert isinstance(event["latencyMs"], int) and event["latencyMs"] >= 0


def test_stale_sha256_is_refused_then_recovered_by_reading_again(workspace: Path) -> None:
    touch = "open('calc.py', 'a').write('# touched\\n')"
    provider = scripted(call("read_file", path="calc.py"),
                        call("run_command", argv=[PY, "-c", touch]),
                        call("edit_file", **EDIT),          # sha256 of the first read: stale
                        call("read_file", path="calc.py"),
                        call("edit_file", **EDIT),          # fresh sha256
                        answer("DONE: fixed"))
    result = run(workspace, provider)
    outcomes = [(t["tool"], t["outcome"], t["error"]) for t in of_type(result, "tool_call")]
    assert outcomes[2] == ("edit_file", "error",
                           "stale sha256: file changed since you read it; read it again")
    assert outcomes[4] == ("edit_file", "ok", None)
    assert (workspace / "calc.py").read_text() == FIXED + "# touched\n"
    assert result.claim == "success"


def test_tool_results_answer_their_calls_in_the_next_request(workspace: Path) -> None:
    provider = Recording(scripted(calls(("read_file", {"path": "calc.py"}),
                                        ("list_dir", {})), answer("DONE: ok")))
    run(workspace, provider)
    messages = provider.requests()[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in messages[3:]] == ["call_0_0", "call_0_1"]
    digest = hashlib.sha256((workspace / "calc.py").read_bytes()).hexdigest()
    assert messages[3]["content"].startswith(f"path: calc.py\nsha256: {digest}\nlines: 2\n\n")


def test_request_body_follows_the_contract(workspace: Path) -> None:
    provider = Recording(scripted(answer("DONE: ok")))
    run(workspace, provider, settings=AgentSettings(model="m1", tools=("read_file", "search"),
                                                    max_output_tokens=321))
    body = provider.requests()[0]
    assert sorted(body) == ["max_tokens", "messages", "model", "tools"]
    assert (body["model"], body["max_tokens"]) == ("m1", 321)
    assert body["messages"] == [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
                                {"role": "user", "content": TASK}]
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file", "search"]
    assert provider.sent[0][2] is not None and provider.sent[0][2] > 0  # timeout_s = wall left


def test_reasoning_effort_and_temperature_are_sent_only_when_set(workspace: Path) -> None:
    provider = Recording(scripted(answer("DONE: ok")))
    run(workspace, provider, settings=AgentSettings(model="m", reasoning_effort="low",
                                                    temperature=0.0))
    body = provider.requests()[0]
    assert (body["reasoning_effort"], body["temperature"]) == ("low", 0.0)


def test_invalid_tool_call_json_becomes_an_observation(workspace: Path) -> None:
    bad = {"toolCalls": [{"name": "read_file", "arguments": '{"path": "calc.py"'}]}
    provider = Recording(scripted(bad, answer("DONE: recovered")))
    result = run(workspace, provider)
    event = of_type(result, "tool_call")[0]
    assert (event["outcome"], event["arguments"]) == ("error", '{"path": "calc.py"')
    assert event["error"].startswith("arguments are not valid JSON: ")
    tool_message = provider.requests()[1]["messages"][-1]
    assert tool_message["content"] == "error: " + event["error"]
    assert len(incidents(result, "tool_error")) == 1
    assert (result.stop_reason, result.claim) == ("answered", "success")


def test_unknown_tool_is_an_observation_with_no_effect(workspace: Path) -> None:
    result = run(workspace, scripted(call("teleport", to="mars"), answer("GIVE UP: no way")))
    event = of_type(result, "tool_call")[0]
    assert (event["effect"], event["outcome"]) == (None, "error")
    assert event["error"].startswith("unknown tool 'teleport'; available: list_dir, read_file")
    assert result.claim == "gave_up"


def test_answer_cut_by_the_output_limit_is_truncated(workspace: Path) -> None:
    result = run(workspace, scripted({"content": "DONE: I fixed ev", "finishReason": "length"}))
    assert (result.stop_reason, result.claim) == ("truncated", "none")
    assert result.final_message == "DONE: I fixed ev"


def test_exhausted_script_gives_up(workspace: Path) -> None:
    result = run(workspace, scripted(call("list_dir")))
    assert (result.stop_reason, result.claim, result.final_message) == (
        "answered", "gave_up", "GIVE UP: script exhausted")


class Raising:
    """A provider that fails like a real one after ``after`` good calls."""

    name = "raising"

    def __init__(self, inner: Any, error: Exception, after: int = 0) -> None:
        self.inner, self.error, self.after = inner, error, after

    def send(self, request: dict[str, Any], *, purpose: str = "main",
             timeout_s: float | None = None) -> dict[str, Any]:
        if self.after == 0:
            raise self.error
        self.after -= 1
        return self.inner.send(request, purpose=purpose, timeout_s=timeout_s)


def test_provider_error_stops_with_its_cause(workspace: Path) -> None:
    error = ProviderRateLimited("HTTP 429 after 3 retries")
    result = run(workspace, Raising(scripted(call("list_dir")), error, after=1))
    assert (result.stop_reason, result.claim, result.turns) == ("error", "none", 1)
    assert result.error == {"kind": "provider", "cause": "rate_limited",
                            "message": "HTTP 429 after 3 retries", "retries": []}


def test_cassette_miss_stops_as_replay_divergence(workspace: Path) -> None:
    miss = CassetteMiss("task t: call 0: messages[1].content differs", call_index=0,
                        field="messages[1].content", recorded="Fix it", actual="Fix that")
    result = run(workspace, Raising(None, miss))
    assert result.stop_reason == "error"
    assert result.error == {"kind": "replay_divergence", "cause": "replay_divergence",
                            "message": "task t: call 0: messages[1].content differs",
                            "callIndex": 0, "field": "messages[1].content",
                            "recorded": "Fix it", "actual": "Fix that"}


class CutStream:
    """Streams like the scripted provider but the connection drops before the end."""

    name = "cut"

    def send(self, request: dict[str, Any], *, purpose: str = "main",
             timeout_s: float | None = None) -> dict[str, Any]:
        exchange = scripted(answer("DONE: all good"), stream=True).send(request)
        exchange["events"] = exchange["events"][:2]  # role delta and one content piece
        return exchange


def test_incomplete_response_stops_with_an_error(workspace: Path) -> None:
    result = run(workspace, CutStream())
    assert (result.stop_reason, result.claim) == ("error", "none")
    assert result.error is not None and result.error["kind"] == "incomplete_response"


def test_cancel_before_start_makes_no_model_call(workspace: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    result = run(workspace, scripted(answer("DONE")), cancel=cancel)
    assert (result.stop_reason, result.turns, result.events) == ("cancelled", 0, [])


def test_cancel_set_during_the_model_call_stops_before_the_tools(workspace: Path) -> None:
    cancel = threading.Event()
    provider = Recording(scripted(call("list_dir"), answer("DONE")),
                         on_send=lambda n, purpose: cancel.set())
    result = run(workspace, provider, cancel=cancel)
    assert (result.stop_reason, result.claim, result.turns) == ("cancelled", "none", 1)
    assert of_type(result, "tool_call") == []


def test_cancel_during_a_command_kills_it_and_ends_the_run(workspace: Path) -> None:
    cancel = threading.Event()
    fifo = workspace / "ready"
    os.mkfifo(fifo)

    def cancel_once_the_command_runs() -> None:
        with open(fifo) as ready:  # blocks until the child opens the FIFO to write
            ready.read()
        cancel.set()

    watcher = threading.Thread(target=cancel_once_the_command_runs, daemon=True)
    watcher.start()
    code = "import os; open('ready', 'w').write('x'); r, w = os.pipe(); os.read(r, 1)"
    result = run(workspace, scripted(call("run_command", argv=[PY, "-c", code]), answer("DONE")),
                 cancel=cancel)
    watcher.join(timeout=10)
    event = of_type(result, "tool_call")[0]
    assert (event["outcome"], event["error"]) == ("error", "cancelled")
    assert (result.stop_reason, result.turns) == ("cancelled", 1)


@pytest.mark.parametrize(("text", "claim"), [
    ("DONE: fixed", "success"), ("**DONE:** fixed", "success"), ("  GIVE UP: stuck", "gave_up"),
    ("I think it is done", "none"), ("", "none"), (None, "none"), ("done: lower", "none"),
])
def test_claim_of(text: str | None, claim: str) -> None:
    assert claim_of(text) == claim
