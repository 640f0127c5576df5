"""lab.agents.builtin.policy (SPEC H3): decisions, and the events a run records for them."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import PY, Recording, answer, call, incidents, of_type, run, scripted

from lab.agents.builtin.policy import Decision, Policy

NONE: frozenset[str] = frozenset()


@pytest.mark.parametrize(("policy", "effect", "granted", "asked"), [
    (Policy("ask"), "read", True, False),
    (Policy("auto"), "read", True, False),
    (Policy("ask", read_only=True), "read", True, False),
    (Policy("ask"), "write", False, True),
    (Policy("ask", frozenset({"write"})), "write", True, False),
    (Policy("ask", frozenset({"write"})), "process", False, True),
    (Policy("auto"), "process", False, False),
    (Policy("auto", frozenset({"process"})), "process", True, False),
    (Policy("full"), "process", True, False),
    (Policy("full"), "external", True, False),
    (Policy("full", read_only=True), "write", False, False),
    (Policy("ask", frozenset({"write"}), read_only=True), "write", False, False),
    (Policy("auto", frozenset({"write"}), read_only=True), "process", False, False),
])
def test_decide(policy: Policy, effect: str, granted: bool, asked: bool) -> None:
    decision = policy.decide(effect)
    assert (decision.granted, decision.asked) == (granted, asked)
    assert (decision.reason == "") == granted


def test_reasons_name_the_rule() -> None:
    assert Policy("ask").decide("write").reason.startswith(
        "denied: the write effect needs approval")
    assert Policy("auto").decide("process").reason.startswith(
        "refused: the policy does not allow the process effect (mode auto")
    assert Policy("full", read_only=True).decide("write") == Decision(
        False, reason="refused: this task is read-only (no write effect)")


@pytest.mark.parametrize("bad", [{"mode": "yolo"}, {"allow": frozenset({"network"})}])
def test_invalid_policy_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="policy"):
        Policy(**bad)  # type: ignore[arg-type]


def test_from_json_reads_the_suite_shape() -> None:
    policy = Policy.from_json({"mode": "ask", "allow": ["write"], "readOnly": True})
    assert policy == Policy("ask", frozenset({"write"}), True)
    assert policy.to_json() == {"mode": "ask", "allow": ["write"], "readOnly": True}


def write_new() -> dict[str, object]:
    return call("write_file", path="new.txt", content="hello\n")


def test_ask_denies_headless_with_approval_event_and_incident(workspace: Path) -> None:
    provider = Recording(scripted(write_new(), answer("GIVE UP: not allowed")))
    result = run(workspace, provider, policy=Policy("ask", NONE))
    assert not (workspace / "new.txt").exists()
    assert [e["type"] for e in result.events[1:4]] == ["approval", "incident", "tool_call"]
    assert of_type(result, "approval") == [{"seq": 1, "type": "approval", "tool": "write_file",
                                            "effect": "write", "decision": "denied"}]
    assert len(incidents(result, "approval_denied")) == 1
    event = of_type(result, "tool_call")[0]
    assert (event["outcome"], event["effect"]) == ("denied", "write")
    observation = provider.requests()[1]["messages"][-1]["content"]
    assert observation.startswith("error: denied: ")
    assert result.stop_reason == "answered"


def test_ask_grants_allowed_effects_without_asking(workspace: Path) -> None:
    result = run(workspace, scripted(write_new(), answer("DONE")),
                 policy=Policy("ask", frozenset({"write"})))
    assert (workspace / "new.txt").read_text() == "hello\n"
    assert of_type(result, "approval") == [] and incidents(result, "approval_denied") == []


def test_read_is_granted_even_when_nothing_is_allowed(workspace: Path) -> None:
    result = run(workspace, scripted(call("read_file", path="calc.py"), answer("DONE")),
                 policy=Policy("ask", NONE))
    assert of_type(result, "tool_call")[0]["outcome"] == "ok"
    assert of_type(result, "approval") == []


def test_auto_refuses_without_an_approval_event(workspace: Path) -> None:
    provider = Recording(scripted(call("run_command", argv=[PY, "-c", "open('x', 'w')"]),
                                  answer("DONE")))
    result = run(workspace, provider, policy=Policy("auto", frozenset({"write"})))
    assert not (workspace / "x").exists()
    assert of_type(result, "approval") == [] and incidents(result, "approval_denied") == []
    assert of_type(result, "tool_call")[0]["outcome"] == "denied"
    assert provider.requests()[1]["messages"][-1]["content"].startswith("error: refused: ")


def test_full_grants_every_effect(workspace: Path) -> None:
    result = run(workspace, scripted(write_new(),
                                     call("run_command", argv=[PY, "-c", "open('x', 'w')"]),
                                     answer("DONE")), policy=Policy("full", NONE))
    assert (workspace / "new.txt").exists() and (workspace / "x").exists()
    assert [e["outcome"] for e in of_type(result, "tool_call")] == ["ok", "ok"]
    assert of_type(result, "approval") == []


@pytest.mark.parametrize("mode", ["ask", "auto", "full"])
def test_read_only_refuses_writes_in_every_mode(workspace: Path, mode: str) -> None:
    before = (workspace / "calc.py").read_bytes()
    edit = {"path": "calc.py", "sha256": "@sha256:calc.py", "old": "range(n)", "new": "x"}
    result = run(workspace, scripted(call("read_file", path="calc.py"), call("edit_file", **edit),
                                     write_new(), answer("DONE")),
                 policy=Policy(mode, frozenset({"write"}), True))  # type: ignore[arg-type]
    assert [e["outcome"] for e in of_type(result, "tool_call")] == ["ok", "denied", "denied"]
    assert (workspace / "calc.py").read_bytes() == before and not (workspace / "new.txt").exists()
    assert of_type(result, "approval") == []
