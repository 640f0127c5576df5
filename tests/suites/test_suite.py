"""Suite loading: schema and semantic checks, every problem at once, the place named."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from lab.errors import SuiteError
from lab.paths import SUITES_DIR
from lab.suites.load import load_suite, suite_digest

VALID: dict[str, Any] = {
    "schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0", "description": "d",
    "tasks": [{
        "id": "t1", "prompt": "do it", "fixture": "fixtures/t1",
        "budget": {"maxTurns": 5, "maxWallMs": 1000},
        "policy": {"mode": "auto", "allow": ["write"]},
        "verifiers": [{"id": "v1", "kind": "file-contains", "path": "a.txt", "text": "x"},
                      {"id": "v2", "kind": "command", "argv": ["python3", "-c", "pass"], "timeoutMs": 1000}],
    }],
}


def make_suite(root: Path, doc: dict[str, Any]) -> Path:
    (root / "fixtures" / "t1").mkdir(parents=True, exist_ok=True)
    (root / "fixtures" / "t1" / "a.txt").write_text("hello\n")
    (root / "suite.json").write_text(json.dumps(doc))
    return root


def problems_of(root: Path, doc: dict[str, Any]) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(make_suite(root, doc))
    return info.value.problems


def test_valid_suite_loads(tmp_path: Path) -> None:
    suite = load_suite(make_suite(tmp_path, VALID))
    assert suite.id == "demo"
    assert suite.tasks[0].fixture == tmp_path / "fixtures" / "t1"
    assert len(suite.digest) == 64


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: d["tasks"][0]["verifiers"][1].update(timeoutMs=900000),
     "suite demo: task t1: tasks[0].verifiers[1].timeoutMs: 900000 is greater than the maximum of 600000"),
    (lambda d: d["tasks"][0]["budget"].pop("maxTurns"),
     "suite demo: task t1: tasks[0].budget: 'maxTurns' is a required property"),
    (lambda d: d.update(suiteVersion="1.0"), "suite demo: suiteVersion: '1.0' is not a semantic version"),
    (lambda d: d.update(schemaVersion=2), "suite demo: schemaVersion: 1 was expected"),
    (lambda d: d["tasks"][0].update(fixture="../outside"), "task t1: tasks[0].fixture: path '../outside' contains '..'"),
    (lambda d: d["tasks"][0].update(fixture="/etc"), "task t1: tasks[0].fixture: path '/etc' is absolute"),
    (lambda d: d["tasks"][0].update(fixture="C:\\x"), "task t1: tasks[0].fixture: path 'C:\\\\x' is absolute"),
    (lambda d: d["tasks"][0].update(fixture="~/x"), "task t1: tasks[0].fixture: path '~/x' starts with '~'"),
    (lambda d: d["tasks"][0].update(fixture="fixtures/none"), "tasks[0].fixture: fixture directory 'fixtures/none' does not exist"),
    (lambda d: d["tasks"][0]["verifiers"][0].update(path="../../etc/passwd"), "tasks[0].verifiers[0].path: path"),
    (lambda d: d["tasks"][0]["verifiers"][1].update(id="v1"), "tasks[0].verifiers[1].id: duplicate verifier id 'v1'"),
    (lambda d: d["tasks"].append(copy.deepcopy(d["tasks"][0])), "task t1: tasks[1].id: duplicate task id 't1'"),
    (lambda d: d["tasks"][0].update(replayNormalize=[{"pattern": "(", "replace": ""}]),
     "tasks[0].replayNormalize[0].pattern: invalid regular expression"),
    (lambda d: d["tasks"][0]["verifiers"].append({"id": "s", "kind": "tool-sequence", "rule": "never", "tool": "rm"}),
     "tasks[0].verifiers[2].tool: unknown tool 'rm'"),
    (lambda d: d["tasks"][0]["verifiers"][0].update(kind="nope"), "tasks[0].verifiers[0].kind: 'nope' is not one of"),
    (lambda d: d["tasks"][0].update(extra=1), "Additional properties are not allowed ('extra' was unexpected)"),
])
def test_each_problem_names_its_field(tmp_path: Path, edit: Any, expected: str) -> None:
    doc = copy.deepcopy(VALID)
    edit(doc)
    assert any(expected in p for p in problems_of(tmp_path, doc)), problems_of(tmp_path, doc)


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    doc = copy.deepcopy(VALID)
    doc["tasks"][0]["budget"]["maxWallMs"] = 0
    doc["tasks"][0]["verifiers"][1]["timeoutMs"] = 900000
    problems = problems_of(tmp_path, doc)
    assert problems[0].endswith("suite.json: 2 problem(s)")
    assert len(problems) == 3


def test_symlink_escaping_the_suite_is_rejected(tmp_path: Path) -> None:
    suite_dir = make_suite(tmp_path / "suite", VALID)
    os.symlink(tmp_path, suite_dir / "fixtures" / "t1" / "escape")
    problems = problems_of(suite_dir, VALID)
    assert any("fixtures/t1/escape: symlink resolves outside the suite directory" in p for p in problems)


def test_fixture_symlinked_outside_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    suite_dir = tmp_path / "suite"
    make_suite(suite_dir, VALID)
    (suite_dir / "fixtures" / "t2").symlink_to(outside)
    doc = copy.deepcopy(VALID)
    doc["tasks"][0]["fixture"] = "fixtures/t2"
    assert any("resolves outside the suite directory" in p for p in problems_of(suite_dir, doc))


def test_sibling_prefix_is_not_inside(tmp_path: Path) -> None:
    (tmp_path / "ab").mkdir()
    suite_dir = make_suite(tmp_path / "a", VALID)
    (suite_dir / "fixtures" / "t3").symlink_to(tmp_path / "ab")
    doc = copy.deepcopy(VALID)
    doc["tasks"][0]["fixture"] = "fixtures/t3"
    assert any("outside" in p for p in problems_of(suite_dir, doc))


def test_not_json_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text("{nope")
    with pytest.raises(SuiteError, match="suite.json: not readable JSON"):
        load_suite(tmp_path)


def test_digest_changes_with_any_fixture_byte(tmp_path: Path) -> None:
    suite_dir = make_suite(tmp_path, VALID)
    before = suite_digest(suite_dir)
    (suite_dir / "fixtures" / "t1" / "a.txt").write_text("hello!\n")
    assert suite_digest(suite_dir) != before


def test_digest_ignores_bytecode_caches(tmp_path: Path) -> None:
    suite_dir = make_suite(tmp_path, VALID)
    before = suite_digest(suite_dir)
    (suite_dir / "fixtures" / "t1" / "__pycache__").mkdir()
    (suite_dir / "fixtures" / "t1" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert suite_digest(suite_dir) == before


@pytest.mark.parametrize("suite_dir", sorted(p.parent for p in SUITES_DIR.glob("*/suite.json")),
                         ids=lambda p: p.name)
def test_bundled_suites_load(suite_dir: Path) -> None:
    assert load_suite(suite_dir).tasks


def test_digest_covers_suite_json_and_scripts(tmp_path: Path) -> None:
    suite_dir = make_suite(tmp_path, VALID)
    before = suite_digest(suite_dir)
    (suite_dir / "suite.json").write_text(json.dumps({**VALID, "description": "other"}))
    after_json = suite_digest(suite_dir)
    (suite_dir / "scripts").mkdir()
    (suite_dir / "scripts" / "t1.json").write_text("{}")
    assert len({before, after_json, suite_digest(suite_dir)}) == 3


def test_digest_does_not_depend_on_where_the_suite_lives(tmp_path: Path) -> None:
    import shutil

    suite_dir = make_suite(tmp_path / "a", VALID)
    shutil.copytree(suite_dir, tmp_path / "elsewhere" / "b")
    assert suite_digest(tmp_path / "elsewhere" / "b") == suite_digest(suite_dir)
    assert load_suite(suite_dir).digest == suite_digest(suite_dir)
