"""A corpus of malformed suites, one per rule of SPEC S2–S4, each naming its exact place.

Every case edits a valid two-task suite written to ``tmp_path`` and asserts
the exact problem line: ``suite <id>: task <task-id>: <field path>: <what>``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lab.errors import SuiteError
from lab.suites.load import load_suite

VALID: dict[str, Any] = {
    "schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0", "description": "d",
    "tasks": [
        {"id": "t1", "prompt": "do it", "fixture": "fixtures/t1",
         "budget": {"maxTurns": 5, "maxWallMs": 1000},
         "policy": {"mode": "auto", "allow": ["write", "process"]},
         "verifiers": [{"id": "cmd", "kind": "command", "argv": ["python3", "-c", "pass"], "timeoutMs": 1000},
                       {"id": "has", "kind": "file-contains", "path": "a.txt", "text": "x"},
                       {"id": "scope", "kind": "tree-diff-within", "allowed": ["a.txt", "pkg/"]},
                       {"id": "seq", "kind": "tool-sequence", "rule": "never", "tool": "write_file"}]},
        {"id": "t2", "prompt": "again", "fixture": "fixtures/t2",
         "budget": {"maxTurns": 5, "maxWallMs": 1000},
         "policy": {"mode": "auto"},
         "verifiers": [{"id": "gone", "kind": "file-absent", "path": "old.txt"}]},
    ],
}

Edit = Callable[[dict[str, Any]], Any]


def t(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda d: d["tasks"][i]


def v(i: int, j: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda d: d["tasks"][i]["verifiers"][j]


def setf(get: Callable[[dict[str, Any]], dict[str, Any]], **fields: Any) -> Edit:
    return lambda d: get(d).update(fields)


def drop(get: Callable[[dict[str, Any]], dict[str, Any]], key: str) -> Edit:
    return lambda d: get(d).pop(key)


T1 = "suite demo: task t1: tasks[0]"
T2 = "suite demo: task t2: tasks[1]"
NO_PARENT = "contains '..'; it must stay inside"

CORPUS: list[tuple[str, Edit, str]] = [
    # --- top level (S2)
    ("schema-version", setf(lambda d: d, schemaVersion=2), "suite demo: schemaVersion: 1 was expected"),
    ("suite-id-pattern", setf(lambda d: d, suiteId="has space"),
     "suite has space: suiteId: 'has space' does not match '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'"),
    ("suite-version-semver", setf(lambda d: d, suiteVersion="1.0"),
     "suite demo: suiteVersion: '1.0' is not a semantic version (e.g. 1.0.0)"),
    ("suite-version-prefix", setf(lambda d: d, suiteVersion="v1.0.0"),
     "suite demo: suiteVersion: 'v1.0.0' is not a semantic version (e.g. 1.0.0)"),
    ("suite-version-type", setf(lambda d: d, suiteVersion=1), "suite demo: suiteVersion: 1 is not of type 'string'"),
    ("description-required", drop(lambda d: d, "description"),
     "suite demo: (root): 'description' is a required property"),
    ("tasks-non-empty", setf(lambda d: d, tasks=[]), "suite demo: tasks: [] should be non-empty"),
    ("top-level-unknown", setf(lambda d: d, verifers=[]),
     "suite demo: (root): Additional properties are not allowed ('verifers' was unexpected)"),
    # --- task fields
    ("task-not-object", lambda d: d["tasks"].__setitem__(1, "t2"),
     "suite demo: task #1: tasks[1]: 't2' is not of type 'object'"),
    ("task-id-pattern", setf(t(1), id="../t2"),
     "suite demo: task ../t2: tasks[1].id: '../t2' does not match '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'"),
    ("task-id-missing", drop(t(1), "id"), "suite demo: task #1: tasks[1]: 'id' is a required property"),
    ("prompt-empty", setf(t(0), prompt=""), f"{T1}.prompt: '' should be non-empty"),
    ("task-unknown-key", setf(t(0), extra=1),
     f"{T1}: Additional properties are not allowed ('extra' was unexpected)"),
    ("tags-unique", setf(t(0), tags=["a", "a"]), f"{T1}.tags: ['a', 'a'] has non-unique elements"),
    ("agent-pattern", setf(t(0), agent="a b"), f"{T1}.agent: 'a b' does not match '^[A-Za-z0-9][A-Za-z0-9._-]*$'"),
    ("agent-unknown", setf(t(0), agent="nobody"), f"{T1}.agent: no agent profile 'nobody' (available: aider, builtin, codex, mini-swe-agent, reference)"),
    ("fixture-git-type", setf(t(0), fixtureGit="yes"), f"{T1}.fixtureGit: 'yes' is not of type 'boolean'"),
    ("replay-normalize-regex", setf(t(0), replayNormalize=[{"pattern": "(", "replace": ""}]),
     f"{T1}.replayNormalize[0].pattern: invalid regular expression: missing ) at position 1"),
    ("replay-normalize-replace", setf(t(0), replayNormalize=[{"pattern": "x"}]),
     f"{T1}.replayNormalize[0]: 'replace' is a required property"),
    # --- budget
    ("budget-max-turns-required", drop(lambda d: d["tasks"][0]["budget"], "maxTurns"),
     f"{T1}.budget: 'maxTurns' is a required property"),
    ("budget-max-wall-required", drop(lambda d: d["tasks"][0]["budget"], "maxWallMs"),
     f"{T1}.budget: 'maxWallMs' is a required property"),
    ("budget-max-wall-zero", setf(lambda d: d["tasks"][0]["budget"], maxWallMs=0),
     f"{T1}.budget.maxWallMs: 0 is less than the minimum of 1"),
    ("budget-max-tokens-zero", setf(lambda d: d["tasks"][0]["budget"], maxTokens=0),
     f"{T1}.budget.maxTokens: 0 is less than the minimum of 1"),
    ("budget-max-tool-calls-negative", setf(lambda d: d["tasks"][0]["budget"], maxToolCalls=-1),
     f"{T1}.budget.maxToolCalls: -1 is less than the minimum of 0"),
    ("budget-bool-is-not-int", setf(lambda d: d["tasks"][0]["budget"], maxTurns=True),
     f"{T1}.budget.maxTurns: True is not of type 'integer'"),
    # --- policy
    ("policy-mode", setf(lambda d: d["tasks"][0]["policy"], mode="yolo"),
     f"{T1}.policy.mode: 'yolo' is not one of ['ask', 'auto', 'full']"),
    ("policy-effect", setf(lambda d: d["tasks"][0]["policy"], allow=["write", "network"]),
     f"{T1}.policy.allow[1]: 'network' is not one of ['write', 'process', 'external', 'analysis']"),
    ("policy-effect-unique", setf(lambda d: d["tasks"][0]["policy"], allow=["write", "write"]),
     f"{T1}.policy.allow: ['write', 'write'] has non-unique elements"),
    ("policy-read-only-contradiction", setf(lambda d: d["tasks"][0]["policy"], readOnly=True),
     f"{T1}.policy.readOnly: true contradicts policy.allow, which grants 'write'"),
    # --- verifiers
    ("verifiers-non-empty", setf(t(1), verifiers=[]), f"{T2}.verifiers: [] should be non-empty"),
    ("verifier-kind", setf(v(0, 1), kind="llm-judge"),
     f"{T1}.verifiers[1].kind: 'llm-judge' is not one of ['command', 'file-equals', 'file-contains', "
     "'file-absent', 'tree-diff-within', 'tool-sequence', 'answer-contains', 'answer-matches']"),
    ("verifier-id-duplicate", setf(v(0, 1), id="cmd"), f"{T1}.verifiers[1].id: duplicate verifier id 'cmd' "
                                                       "(also verifiers[0])"),
    ("verifier-weight", setf(v(0, 1), weight=-1), f"{T1}.verifiers[1].weight: -1 is less than the minimum of 0"),
    ("verifier-field-of-other-kind", setf(v(0, 1), argv=["x"]),
     f"{T1}.verifiers[1]: Additional properties are not allowed ('argv' was unexpected)"),
    ("command-argv-required", drop(v(0, 0), "argv"), f"{T1}.verifiers[0]: 'argv' is a required property"),
    ("command-timeout-max", setf(v(0, 0), timeoutMs=900000),
     f"{T1}.verifiers[0].timeoutMs: 900000 is greater than the maximum of 600000"),
    ("command-expect-exit", setf(v(0, 0), expectExit=256),
     f"{T1}.verifiers[0].expectExit: 256 is greater than the maximum of 255"),
    ("file-equals-sha", lambda d: d["tasks"][0]["verifiers"].__setitem__(
        1, {"id": "eq", "kind": "file-equals", "path": "a.txt", "sha256": "ABC"}),
     f"{T1}.verifiers[1].sha256: 'ABC' does not match '^[0-9a-f]{{64}}$'"),
    ("file-contains-text", drop(v(0, 1), "text"), f"{T1}.verifiers[1]: 'text' is a required property"),
    ("tree-diff-allowed", drop(v(0, 2), "allowed"), f"{T1}.verifiers[2]: 'allowed' is a required property"),
    ("tool-sequence-rule", setf(v(0, 3), rule="sometimes"),
     f"{T1}.verifiers[3].rule: 'sometimes' is not one of ['before', 'never', 'max-calls', 'no-repeat-failure']"),
    ("tool-sequence-before-fields", setf(v(0, 3), rule="before"),
     f"{T1}.verifiers[3]: 'first' is a required property"),
    ("tool-sequence-unknown-tool", setf(v(0, 3), tool="rm_rf"),
     f"{T1}.verifiers[3].tool: unknown tool 'rm_rf' (known: edit_file, list_dir, read_file, run_command, "
     "search, write_file)"),
    ("tool-sequence-unused-field", setf(v(0, 3), max=3),
     f"{T1}.verifiers[3].max: not used by rule 'never' (it reads tool)"),
    # --- ids (S3)
    ("task-id-duplicate", setf(t(1), id="t1"), "suite demo: task t1: tasks[1].id: duplicate task id 't1' "
                                               "(also tasks[0])"),
    # --- paths (S3): fixture
    ("fixture-dotdot", setf(t(1), fixture="../outside"), f"{T2}.fixture: path '../outside' {NO_PARENT}"),
    ("fixture-dotdot-inner", setf(t(1), fixture="fixtures/../../x"),
     f"{T2}.fixture: path 'fixtures/../../x' {NO_PARENT}"),
    ("fixture-absolute-posix", setf(t(1), fixture="/etc"), f"{T2}.fixture: path '/etc' is absolute; use a relative path"),
    ("fixture-absolute-double-slash", setf(t(1), fixture="//server/share"),
     f"{T2}.fixture: path '//server/share' is absolute; use a relative path"),
    ("fixture-windows-drive", setf(t(1), fixture="C:\\fixtures"),
     f"{T2}.fixture: path 'C:\\\\fixtures' is absolute; use a relative path"),
    ("fixture-windows-drive-forward", setf(t(1), fixture="C:/fixtures"),
     f"{T2}.fixture: path 'C:/fixtures' is absolute; use a relative path"),
    ("fixture-windows-drive-relative", setf(t(1), fixture="C:fixtures"),
     f"{T2}.fixture: path 'C:fixtures' is absolute; use a relative path"),
    ("fixture-windows-unc", setf(t(1), fixture="\\\\server\\share\\x"),
     f"{T2}.fixture: path '\\\\\\\\server\\\\share\\\\x' is absolute; use a relative path"),
    ("fixture-backslash", setf(t(1), fixture="fixtures\\t2"),
     f"{T2}.fixture: path 'fixtures\\\\t2' contains a backslash; use '/' separators"),
    ("fixture-nul", setf(t(1), fixture="fixtures/t2\x00"), f"{T2}.fixture: path contains a NUL byte"),
    ("fixture-control", setf(t(1), fixture="fixtures/t2\n"), f"{T2}.fixture: path 'fixtures/t2\\n' contains a "
                                                             "control character"),
    ("fixture-tilde", setf(t(1), fixture="~/fixtures"),
     f"{T2}.fixture: path '~/fixtures' starts with '~'; use a path relative to the suite"),
    ("fixture-tilde-user", setf(t(1), fixture="~root"),
     f"{T2}.fixture: path '~root' starts with '~'; use a path relative to the suite"),
    ("fixture-is-suite-root", setf(t(1), fixture="."),
     f"{T2}.fixture: path '.' names the directory itself; name something inside it"),
    ("fixture-missing", setf(t(1), fixture="fixtures/none"), f"{T2}.fixture: fixture directory 'fixtures/none' "
                                                             "does not exist"),
    ("fixture-is-file", setf(t(1), fixture="fixtures/file.txt"),
     f"{T2}.fixture: fixture 'fixtures/file.txt' is not a directory"),
    ("fixture-empty", setf(t(1), fixture=""), f"{T2}.fixture: '' should be non-empty"),
    # --- paths (S3): verifiers
    ("verifier-path-dotdot", setf(v(1, 0), path="../../etc/passwd"),
     f"{T2}.verifiers[0].path: path '../../etc/passwd' {NO_PARENT}"),
    ("verifier-path-absolute", setf(v(1, 0), path="/etc/passwd"),
     f"{T2}.verifiers[0].path: path '/etc/passwd' is absolute; use a relative path"),
    ("verifier-path-windows", setf(v(1, 0), path="D:\\x"),
     f"{T2}.verifiers[0].path: path 'D:\\\\x' is absolute; use a relative path"),
    ("verifier-path-tilde", setf(v(1, 0), path="~/.ssh/id_rsa"),
     f"{T2}.verifiers[0].path: path '~/.ssh/id_rsa' starts with '~'; use a path relative to the suite"),
    ("verifier-path-nul", setf(v(1, 0), path="a\x00b"), f"{T2}.verifiers[0].path: path contains a NUL byte"),
    ("verifier-allowed-dotdot", setf(v(0, 2), allowed=["a.txt", "../x/"]),
     f"{T1}.verifiers[2].allowed[1]: path '../x' {NO_PARENT}"),
    ("verifier-allowed-root", setf(v(0, 2), allowed=["/"]),
     f"{T1}.verifiers[2].allowed[0]: path '/' is absolute; use a relative path"),
    ("verifier-allowed-everything", setf(v(0, 2), allowed=["./"]),
     f"{T1}.verifiers[2].allowed[0]: path '.' names the directory itself; name something inside it"),
]


def write_suite(root: Path, doc: Any) -> Path:
    for name in ("t1", "t2"):
        (root / "fixtures" / name).mkdir(parents=True, exist_ok=True)
    (root / "fixtures" / "t1" / "a.txt").write_text("hello\n")
    (root / "fixtures" / "file.txt").write_text("not a directory\n")
    (root / "suite.json").write_text(json.dumps(doc))
    return root


def problems_of(root: Path, doc: Any) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(write_suite(root, doc))
    return info.value.problems


def test_the_base_suite_is_valid(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, VALID))
    assert [t.id for t in suite.tasks] == ["t1", "t2"]


@pytest.mark.parametrize(("edit", "expected"), [(e, x) for _, e, x in CORPUS], ids=[c[0] for c in CORPUS])
def test_malformed_suite_names_the_exact_place(tmp_path: Path, edit: Edit, expected: str) -> None:
    doc = copy.deepcopy(VALID)
    edit(doc)
    problems = problems_of(tmp_path, doc)
    assert expected in problems, "\n".join(problems)
    assert problems[0] == f"{tmp_path / 'suite.json'}: {len(problems) - 1} problem(s)"


def test_schema_and_semantic_problems_are_reported_together(tmp_path: Path) -> None:
    doc = copy.deepcopy(VALID)
    doc["tasks"][0]["verifiers"][0]["timeoutMs"] = 900000       # schema
    doc["tasks"][0]["budget"]["maxWallMs"] = 0                   # schema
    doc["tasks"][1]["fixture"] = "../outside"                    # semantic (path)
    doc["tasks"][1]["verifiers"].append({"id": "gone", "kind": "file-absent", "path": "x"})  # semantic (ids)
    doc["suiteVersion"] = "one"                                  # semantic (semver)
    problems = problems_of(tmp_path, doc)
    assert problems[1:] == [
        "suite demo: suiteVersion: 'one' is not a semantic version (e.g. 1.0.0)",
        f"{T1}.budget.maxWallMs: 0 is less than the minimum of 1",
        f"{T1}.verifiers[0].timeoutMs: 900000 is greater than the maximum of 600000",
        f"{T2}.fixture: path '../outside' {NO_PARENT}",
        f"{T2}.verifiers[1].id: duplicate verifier id 'gone' (also verifiers[0])",
    ]


@pytest.mark.parametrize("document", ["[]", "null", "3", '"suite"', '{"tasks": "none"}', '{"tasks": [1, null]}'])
def test_documents_of_the_wrong_shape_are_suite_errors(tmp_path: Path, document: str) -> None:
    (tmp_path / "suite.json").write_text(document)
    with pytest.raises(SuiteError) as info:
        load_suite(tmp_path)
    assert all(line.startswith(("suite ", str(tmp_path))) for line in info.value.problems)


@pytest.mark.parametrize(("text", "reason"), [
    ("{nope", "not readable JSON"),
    ('{"schemaVersion": NaN}', "NaN is not valid JSON"),
    ('{"schemaVersion": 1e999}', "out of range"),
    ("[" * 100_000, "not readable JSON"),
])
def test_unreadable_json_names_the_file(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "suite.json").write_text(text)
    with pytest.raises(SuiteError) as info:
        load_suite(tmp_path)
    assert str(tmp_path / "suite.json") in info.value.problems[0]
    assert reason in info.value.problems[0]


def test_invalid_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_bytes(b'{"suiteId": "\xff"}')
    with pytest.raises(SuiteError, match="suite.json: not readable JSON"):
        load_suite(tmp_path)


def test_missing_suite_json_names_the_directory(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no suite.json in this directory"):
        load_suite(tmp_path / "nowhere")
