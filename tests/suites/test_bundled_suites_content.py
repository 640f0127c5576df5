"""Content of the bundled suites: every task is solvable, and only by doing the work.

For each task of smoke-coding, core, holdout and tool-sequences, without the lab's agent:

- the shipped fixture fails its verifiers (every command verifier fails);
- the task's scripted solution, applied to a copy of the fixture by the small interpreter
  below, makes every verifier pass: commands, file checks, the tree-diff scope, and the
  tool-sequence rules evaluated over the tool calls the script makes.

The interpreter follows the contracts of the harness and the scripted provider: an
``@sha256:<path>`` argument is resolved, before the turn runs, to the hash most recently
reported for <path> by a tool result (read_file, write_file, edit_file); an edit_file whose
hash is not the current file's is refused (an error observation) and changes nothing;
run_command runs the argv without a shell in the workspace with a minimal environment.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import semver

from tests.helpers.script_interpreter import resolve

SUITES_DIR = Path(__file__).resolve().parents[2] / "suites"
TASK_COUNTS = {"smoke-coding": 7, "core": 5, "holdout": 4, "tool-sequences": 6}
# Restraint tasks are judged only by "change nothing, write nothing": the untouched fixture passes.
PASS_AS_SHIPPED = {("holdout", "restraint-answer-only"), ("holdout", "refuse-invented-fact")}
INVALID_TRANSITION = ("tool-sequences", "stale-hash-recovery")
TOOL_EFFECTS = {"list_dir": "read", "read_file": "read", "search": "read",
                "write_file": "write", "edit_file": "write", "run_command": "process"}
IGNORED_PARTS = {".git", "node_modules", "__pycache__", ".pytest_cache"}
HEX64 = re.compile(r"[0-9a-f]{64}")


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def all_tasks() -> list[tuple[str, dict[str, Any]]]:
    """(suite id, task definition) for every task of the bundled suites written here."""
    return [(suite_id, task) for suite_id in TASK_COUNTS
            for task in load_json(SUITES_DIR / suite_id / "suite.json")["tasks"]]


TASKS = all_tasks()
TASK_IDS = [f"{suite_id}/{task['id']}" for suite_id, task in TASKS]


def script_of(suite_id: str, task: dict[str, Any]) -> dict[str, Any]:
    return load_json(SUITES_DIR / suite_id / "scripts" / f"{task['id']}.json")


def tool_calls(script: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for turn in script["turns"] for call in turn.get("toolCalls", [])]


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_fixture(suite_id: str, task: dict[str, Any], dest: Path) -> Path:
    workspace = dest / "workspace"
    shutil.copytree(SUITES_DIR / suite_id / task["fixture"], workspace,
                    ignore=shutil.ignore_patterns(*IGNORED_PARTS))
    return workspace


def snapshot(root: Path) -> dict[str, str]:
    """Relative POSIX path -> sha256 of every file, ignoring the parts tree-diff ignores."""
    return {p.relative_to(root).as_posix(): file_sha(p) for p in root.rglob("*")
            if p.is_file() and not IGNORED_PARTS.intersection(p.relative_to(root).parts)}


def minimal_env(workspace: Path) -> dict[str, str]:
    """The environment of a command in the bwrap sandbox: its ``PATH`` finds the distribution's ``python3``, as
    the suites' commands do in a run (not this interpreter, nor a version manager's slower one)."""
    from lab.sandbox.bwrap import SANDBOX_PATH

    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": str(workspace), "PYTHONDONTWRITEBYTECODE": "1"}


def run_argv(workspace: Path, argv: list[str], timeout_ms: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=workspace, env=minimal_env(workspace), capture_output=True,
                          text=True, timeout=timeout_ms / 1000, check=False)


# ---------------------------------------------------------------- the scripted solution


@dataclass
class ToolEvent:
    """One executed tool call, as the tool-sequence verifier would see it."""

    tool: str
    arguments: dict[str, Any]
    outcome: str  # "ok" | "error"


@dataclass
class Replay:
    """What applying a script did: tool events in order and the edits the harness refused."""

    events: list[ToolEvent] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256 named)


def apply_edit(workspace: Path, args: dict[str, Any], reported: dict[str, str], replay: Replay) -> str:
    path = workspace / args["path"]
    if args["sha256"] != file_sha(path):
        assert HEX64.fullmatch(args["sha256"]), (
            f"edit_file on {args['path']} names {args['sha256']!r}: no earlier tool result reported "
            "a hash for that path, so the script cannot work")
        replay.refused.append((args["path"], args["sha256"]))
        return "error"
    text = path.read_bytes().decode("utf-8")
    assert text.count(args["old"]) == 1, f"edit_file old text must occur once in {args['path']}"
    path.write_bytes(text.replace(args["old"], args["new"]).encode("utf-8"))
    reported[args["path"]] = file_sha(path)
    return "ok"


def execute(workspace: Path, name: str, args: dict[str, Any], reported: dict[str, str],
            replay: Replay) -> str:
    """Run one tool call against the workspace; return its outcome."""
    path = workspace / args["path"] if "path" in args else workspace
    assert path.resolve().is_relative_to(workspace.resolve()), f"{name} leaves the workspace: {args}"
    if name == "read_file":
        reported[args["path"]] = file_sha(path)
    elif name == "list_dir":
        assert path.is_dir(), f"list_dir on a missing directory: {args['path']}"
    elif name == "write_file":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(args["content"].encode("utf-8"))
        reported[args["path"]] = file_sha(path)
    elif name == "edit_file":
        return apply_edit(workspace, args, reported, replay)
    elif name == "run_command":
        proc = run_argv(workspace, args["argv"], args.get("timeoutMs", 60000))
        return "ok" if proc.returncode == 0 else "error"
    elif name != "search":
        pytest.fail(f"unknown tool {name!r}")
    return "ok"


def apply_script(workspace: Path, script: dict[str, Any]) -> Replay:
    reported: dict[str, str] = {}
    replay = Replay()
    for turn in script["turns"]:
        # The provider substitutes hashes when it answers, i.e. from results before this turn.
        calls = [(call["name"], resolve(call["arguments"], reported)) for call in turn.get("toolCalls", [])]
        for name, args in calls:
            outcome = execute(workspace, name, args, reported, replay)
            replay.events.append(ToolEvent(name, args, outcome))
    return replay


# ---------------------------------------------------------------- verifiers


def command_passes(workspace: Path, verifier: dict[str, Any]) -> bool:
    proc = run_argv(workspace, verifier["argv"], verifier["timeoutMs"])
    return (proc.returncode == verifier.get("expectExit", 0)
            and verifier.get("expectStdoutIncludes", "") in proc.stdout)


def changed_paths(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def within(path: str, allowed: list[str]) -> bool:
    return any(path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in allowed)


def file_verdicts(workspace: Path, task: dict[str, Any], before: dict[str, str]) -> dict[str, bool]:
    """Verifier id -> passes, for every verifier that does not read the event log."""
    verdicts: dict[str, bool] = {}
    for verifier in task["verifiers"]:
        kind, target = verifier["kind"], workspace / verifier.get("path", ".")
        if kind == "command":
            verdicts[verifier["id"]] = command_passes(workspace, verifier)
        elif kind == "file-contains":
            verdicts[verifier["id"]] = target.is_file() and verifier["text"] in target.read_text("utf-8")
        elif kind == "file-equals":
            verdicts[verifier["id"]] = target.is_file() and file_sha(target) == verifier["sha256"]
        elif kind == "file-absent":
            verdicts[verifier["id"]] = not target.exists()
    # Judged last, after the commands, like a careful lab: a command must not widen the diff.
    for verifier in task["verifiers"]:
        if verifier["kind"] == "tree-diff-within":
            changed = changed_paths(before, snapshot(workspace))
            verdicts[verifier["id"]] = all(within(path, verifier["allowed"]) for path in changed)
    return verdicts


def rule_holds(rule: dict[str, Any], events: list[ToolEvent]) -> bool:
    """Strict reading of the V6 rules: a `before` rule also needs its `then` tool to be called."""
    names = [event.tool for event in events]
    if rule["rule"] == "never":
        return rule["tool"] not in names
    if rule["rule"] == "max-calls":
        return names.count(rule["tool"]) <= rule["max"]
    if rule["rule"] == "before":
        return rule["then"] in names and rule["first"] in names[:names.index(rule["then"])]
    assert rule["rule"] == "no-repeat-failure", rule
    for index, event in enumerate(events):
        if event.tool == rule["tool"] and event.outcome == "error":
            if any(later.tool == event.tool and later.arguments == event.arguments
                   for later in events[index + 1:]):
                return False
    return True


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("suite_id", sorted(TASK_COUNTS))
def test_suite_files_parse_with_unique_ids(suite_id: str) -> None:
    suite_dir = SUITES_DIR / suite_id
    suite = load_json(suite_dir / "suite.json")
    assert (suite["schemaVersion"], suite["suiteId"]) == (1, suite_id)
    semver.Version.parse(suite["suiteVersion"])
    assert suite["description"].strip()
    ids = [task["id"] for task in suite["tasks"]]
    assert len(ids) == TASK_COUNTS[suite_id] and len(set(ids)) == len(ids), ids
    for task in suite["tasks"]:
        verifier_ids = [verifier["id"] for verifier in task["verifiers"]]
        assert len(set(verifier_ids)) == len(verifier_ids), (task["id"], verifier_ids)
        assert task["fixture"] == f"fixtures/{task['id']}" and (suite_dir / task["fixture"]).is_dir()
        script = load_json(suite_dir / "scripts" / f"{task['id']}.json")
        assert (script["schemaVersion"], script["taskId"]) == (1, task["id"])
        for verifier in task["verifiers"]:
            for path in [verifier.get("path", "x"), *verifier.get("allowed", [])]:
                assert not path.startswith("/") and ".." not in Path(path).parts, (task["id"], path)
    assert sorted(p.name for p in (suite_dir / "fixtures").iterdir()) == sorted(ids)
    assert sorted(p.stem for p in (suite_dir / "scripts").iterdir() if p.is_file()) == sorted(ids)
    for agent_scripts in (suite_dir / "scripts" / "agents").glob("*"):  # command agents' own scripts
        assert sorted(p.stem for p in agent_scripts.iterdir()) == sorted(ids), agent_scripts


def test_smoke_coding_has_three_easy_and_four_hard_tasks() -> None:
    tags = [task["tags"] for suite_id, task in TASKS if suite_id == "smoke-coding"]
    assert sorted(tag for task_tags in tags for tag in task_tags) == ["easy"] * 3 + ["hard"] * 4


def test_suites_stay_small() -> None:
    total_bytes = sum(p.stat().st_size for suite_id in TASK_COUNTS
                      for p in (SUITES_DIR / suite_id).rglob("*") if p.is_file())
    assert total_bytes < 200_000, total_bytes


@pytest.mark.parametrize(("suite_id", "task"), TASKS, ids=TASK_IDS)
def test_script_fits_policy_and_budget(suite_id: str, task: dict[str, Any]) -> None:
    script = script_of(suite_id, task)
    calls, policy, budget = tool_calls(script), task["policy"], task["budget"]
    effects = {TOOL_EFFECTS[call["name"]] for call in calls}
    assert policy["mode"] == "auto"
    assert ("process" in policy["allow"]) == ("process" in effects), "grant process iff it runs commands"
    if "write" in effects:
        assert "write" in policy["allow"] and not policy["readOnly"]
    assert len(script["turns"]) <= budget["maxTurns"] and len(calls) <= budget["maxToolCalls"]
    assert budget["maxWallMs"] == 120000
    *work, final = script["turns"]
    assert all(turn.get("toolCalls") for turn in work) and "toolCalls" not in final
    expected = "GIVE UP: " if task["id"] == "refuse-invented-fact" else "DONE: "
    assert final["content"].startswith(expected)


@pytest.mark.parametrize(("suite_id", "task"), TASKS, ids=TASK_IDS)
def test_shipped_fixture_fails_its_verifiers(suite_id: str, task: dict[str, Any], tmp_path: Path) -> None:
    workspace = copy_fixture(suite_id, task, tmp_path)
    verdicts = file_verdicts(workspace, task, snapshot(workspace))
    commands = [v["id"] for v in task["verifiers"] if v["kind"] == "command"]
    assert not any(verdicts[vid] for vid in commands), verdicts
    if (suite_id, task["id"]) in PASS_AS_SHIPPED:
        assert all(verdicts.values()), verdicts
    else:
        assert not all(verdicts.values()), verdicts


@pytest.mark.parametrize(("suite_id", "task"), TASKS, ids=TASK_IDS)
def test_scripted_solution_passes_every_verifier(suite_id: str, task: dict[str, Any],
                                                 tmp_path: Path) -> None:
    workspace = copy_fixture(suite_id, task, tmp_path)
    before = snapshot(workspace)
    replay = apply_script(workspace, script_of(suite_id, task))
    verdicts = file_verdicts(workspace, task, before)
    assert all(verdicts.values()), verdicts
    rules = [v for v in task["verifiers"] if v["kind"] == "tool-sequence"]
    broken = [rule["id"] for rule in rules if not rule_holds(rule, replay.events)]
    assert not broken, [(event.tool, event.outcome) for event in replay.events]
    expected_refusals = 1 if (suite_id, task["id"]) == INVALID_TRANSITION else 0
    assert len(replay.refused) == expected_refusals, replay.refused


def test_invalid_transition_names_the_pre_edit_hash_and_is_judged(tmp_path: Path) -> None:
    suite_id, task_id = INVALID_TRANSITION
    task = next(t for s, t in TASKS if (s, t["id"]) == INVALID_TRANSITION)
    workspace = copy_fixture(suite_id, task, tmp_path)
    shipped_sha = file_sha(workspace / "limits.py")
    replay = apply_script(workspace, script_of(suite_id, task))
    assert replay.refused == [("limits.py", shipped_sha)]
    kinds = {v["rule"] for v in task["verifiers"] if v["kind"] == "tool-sequence"}
    assert {"no-repeat-failure", "before"} <= kinds
    # Repeating the refused call unchanged is what no-repeat-failure must catch.
    refused = next(event for event in replay.events if event.outcome == "error")
    rule = next(v for v in task["verifiers"] if v.get("rule") == "no-repeat-failure")
    assert not rule_holds(rule, [*replay.events, ToolEvent(refused.tool, refused.arguments, "error")])
