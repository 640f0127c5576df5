"""The scripted provider's files of a suite are judged when the suite loads (SPEC P2, S4), with real
files in tmp_path, and a broken one stops ``doit eval`` before any run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lab.errors import SuiteError
from lab.providers.registry import make_provider
from lab.suites.load import load_suite
from tests.helpers.lab_process import BIN, ROOT, command_env, run_script

DOC: dict[str, Any] = {
    "schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0", "description": "d",
    "tasks": [{"id": name, "prompt": "p", "fixture": f"fixtures/{name}",
               "budget": {"maxTurns": 2, "maxWallMs": 60000}, "policy": {"mode": "auto"},
               "verifiers": [{"id": "v", "kind": "file-absent", "path": "x"}]} for name in ("t1", "t2")],
}
GOOD: dict[str, Any] = {"schemaVersion": 1, "taskId": "t1", "turns": [{"content": "DONE: nothing to do."}]}


def make(root: Path, doc: dict[str, Any] = DOC) -> Path:
    for name in ("t1", "t2"):
        (root / "fixtures" / name).mkdir(parents=True, exist_ok=True)
    (root / "suite.json").write_text(json.dumps(doc))
    return root


def script(suite: Path, rel: str, content: Any) -> Path:
    path = suite / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def problems(suite: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(suite)
    return info.value.problems[1:]


def test_a_valid_script_and_a_missing_one_load(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    script(suite, "scripts/t1.json", GOOD)  # t2 has none: only provider=scripted needs one
    assert [t.id for t in load_suite(suite).tasks] == ["t1", "t2"]


@pytest.mark.parametrize(("content", "line"), [
    ({**GOOD, "turns": [{"content": 5}]},
     'scripts/t1.json: field "turns[0].content": expected a non-empty string, got 5'),
    ({**GOOD, "turns": [{}]},
     'scripts/t1.json: field "turns[0]": expected at least one of "content" and "toolCalls", got {}'),
    ({**GOOD, "turn": []}, 'scripts/t1.json: field "turn": unknown field'),
    ({**GOOD, "taskId": "t2"}, "scripts/t1.json: field \"taskId\": expected 't1', got 't2'"),
    ({**GOOD, "taskId": "x" * 5000}, "scripts/t1.json: field \"taskId\": expected 't1', got 'xxx"),
    ("{nope", "scripts/t1.json: line 1 column 2: invalid JSON: Expecting property name enclosed in double quotes"),
    ("[]", "scripts/t1.json: expected a JSON object, got a list"),
])
def test_a_broken_script_names_the_task_file_and_field(tmp_path: Path, content: Any, line: str) -> None:
    suite = make(tmp_path / "suite")
    script(suite, "scripts/t1.json", content)
    [found] = problems(suite)
    assert found.startswith(f"suite demo: task t1: {line}"), found
    assert len(found) < 600


def test_a_script_that_is_not_utf8_cannot_be_read(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t2.json").write_bytes(b"\xff{}")
    [found] = problems(suite)
    assert found.startswith("suite demo: task t2: scripts/t2.json: cannot read the scripted-provider script: "
                            "'utf-8' codec can't decode byte 0xff"), found


def test_a_command_agents_script_is_checked_too(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    script(suite, "scripts/agents/probe/t2.json", {**GOOD, "taskId": "t2", "turns": "all"})
    assert problems(suite) == ['suite demo: task t2: scripts/agents/probe/t2.json: field "turns": '
                               'expected a list of turns, got "all"']


def test_files_that_are_no_tasks_script_are_not_read(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    script(suite, "scripts/notes.json", "{nope")
    script(suite, "scripts/t1.txt", "{nope")
    script(suite, "scripts/deeper/t1.json", "{nope")
    assert load_suite(suite).tasks


def test_script_problems_come_with_every_other_problem(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(DOC))
    doc["tasks"][1]["budget"]["maxTurns"] = 0
    suite = make(tmp_path / "suite", doc)
    script(suite, "scripts/t1.json", {**GOOD, "schemaVersion": 0})
    assert problems(suite) == [
        "suite demo: task t2: tasks[1].budget.maxTurns: 0 is less than the minimum of 1",
        'suite demo: task t1: scripts/t1.json: field "schemaVersion": expected 1, got 0']


def test_a_linked_script_is_read_inside_the_suite_and_never_outside(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    script(suite, "shared/answer.json", {**GOOD, "turns": 3})
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t1.json").symlink_to("../shared/answer.json")
    (tmp_path / "outside.json").write_text("{nope")
    (suite / "scripts" / "t2.json").symlink_to(tmp_path / "outside.json")
    assert problems(suite) == [
        "suite demo: scripts/t2.json: symlink resolves outside the suite directory",
        'suite demo: task t1: scripts/t1.json: field "turns": expected a list of turns, got 3']


@pytest.mark.parametrize("content", [
    GOOD, {**GOOD, "taskId": "t2"}, {**GOOD, "turns": []}, {**GOOD, "turns": [{"toolCalls": []}]},
    {**GOOD, "description": 1, "extra": True}, "{nope", "[1]", {**GOOD, "schemaVersion": 2},
    {**GOOD, "turns": [{"toolCalls": [{"name": "read_file", "arguments": "not json"}]}]},
])
def test_load_time_and_the_provider_accept_the_same_scripts(tmp_path: Path, content: Any) -> None:
    suite = make(tmp_path / "suite")
    script(suite, "scripts/t1.json", content)
    try:
        load_suite(suite)
        at_load = True
    except SuiteError:
        at_load = False
    try:
        make_provider({"name": "scripted"}, suite_dir=suite, task_id="t1", env={})
        at_run = True
    except SuiteError:
        at_run = False
    assert at_load == at_run


def test_doit_eval_stops_before_any_run_on_a_broken_script(tmp_path: Path) -> None:
    suite = make(tmp_path / "suites" / "demo")
    (suite / "fixtures" / "t1" / "x").write_text("x")  # so the one run could fail its verifier
    script(suite, "scripts/t1.json", {**GOOD, "turns": [{"content": ""}]})
    env = command_env()
    env["LAB_DATA_DIR"] = str(tmp_path / "runs")
    done = run_script(["doit", "eval", f"suite_dir={tmp_path / 'suites'}", "suite=demo", "provider=scripted", "k=1",
                       "yes=true"], env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'suite demo: task t1: scripts/t1.json: field "turns[0].content": expected a non-empty string, got ""' \
        in done.stderr
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "runs").glob("*/*/runs/*/*.json"))  # no run was recorded


def test_an_eval_without_scripts_for_its_agent_stops_before_any_run(tmp_path: Path) -> None:
    from tests.helpers.lab_process import run_cmd

    result = run_cmd(["lab", "run", "suite=core", "agent=reference", "provider=scripted", "k=1"], tmp_path / "runs")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert line.startswith("provider=scripted: no script for agent reference for 5 of 5 task(s) (")
    assert "suites/core/scripts/agents/reference" in line and "Traceback" not in result.stderr
    assert not list((tmp_path / "runs").rglob("runs/*/*.json")), "no run was made"


def test_missing_scripts_names_the_tasks_without_one(tmp_path: Path) -> None:
    from lab.suites.scripts import missing_scripts

    (tmp_path / "scripts" / "agents" / "a").mkdir(parents=True)
    (tmp_path / "scripts" / "t1.json").write_text("{}")
    (tmp_path / "scripts" / "agents" / "a" / "t2.json").write_text("{}")
    assert missing_scripts(tmp_path, ["t1"]) is None
    assert missing_scripts(tmp_path, ["t2"], "a") is None
    line = missing_scripts(tmp_path, ["t1", "t2"])
    assert line is not None and "for the built-in agent for 1 of 2 task(s) (t2)" in line
    many = missing_scripts(tmp_path, [f"x{i}" for i in range(7)], "a")
    assert many is not None and "7 of 7 task(s) (x0, x1, x2, x3, x4 and 2 more)" in many
