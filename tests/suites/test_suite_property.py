"""Property: whatever suite.json holds, the loader raises SuiteError or loads (S4).

Arbitrary JSON-ish documents, valid documents with a field replaced by an
arbitrary value, and random path strings in every path field: the loader
never lets another exception escape, and a suite that loads keeps every
fixture inside its directory. Deterministic (derandomized, no example
database) so CI sees the same examples every time.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.errors import SuiteError
from lab.suites.load import load_suite

# Drawing the recursive documents costs more than loading them: each property gets the examples that fit
# about half a second (the same ones every run).
SETTINGS = settings(max_examples=50, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

VALID: dict[str, Any] = {
    "schemaVersion": 1, "suiteId": "prop", "suiteVersion": "1.0.0", "description": "d",
    "tasks": [{
        "id": "t1", "prompt": "p", "fixture": "fixtures/t1",
        "budget": {"maxTurns": 2, "maxWallMs": 1000},
        "policy": {"mode": "auto", "allow": ["write"]},
        "verifiers": [{"id": "c", "kind": "file-contains", "path": "a.txt", "text": "x"},
                      {"id": "s", "kind": "tree-diff-within", "allowed": ["a.txt", "pkg/"]},
                      {"id": "q", "kind": "tool-sequence", "rule": "max-calls", "tool": "read_file", "max": 2}],
        "replayNormalize": [{"pattern": "\\d+", "replace": "N"}],
    }],
}
FIELD_NAMES = ["schemaVersion", "suiteId", "suiteVersion", "description", "tasks", "id", "prompt",
               "fixture", "budget", "maxTurns", "maxWallMs", "policy", "mode", "allow", "readOnly",
               "verifiers", "kind", "path", "allowed", "rule", "tool", "max", "weight", "tags", "agent",
               "fixtureGit", "replayNormalize", "pattern", "replace", "argv", "timeoutMs"]
# Places in VALID that get replaced; ints index lists.
LOCATIONS: list[list[Any]] = [
    [], ["schemaVersion"], ["suiteId"], ["suiteVersion"], ["description"], ["tasks"], ["tasks", 0],
    ["tasks", 0, "id"], ["tasks", 0, "fixture"], ["tasks", 0, "budget"], ["tasks", 0, "budget", "maxTurns"],
    ["tasks", 0, "policy"], ["tasks", 0, "policy", "allow"], ["tasks", 0, "verifiers"],
    ["tasks", 0, "verifiers", 0], ["tasks", 0, "verifiers", 0, "path"], ["tasks", 0, "verifiers", 1, "allowed"],
    ["tasks", 0, "verifiers", 2, "tool"], ["tasks", 0, "verifiers", 2, "max"], ["tasks", 0, "replayNormalize"],
    ["tasks", 0, "replayNormalize", 0, "pattern"], ["tasks", 0, "agent"], ["tasks", 0, "tags"],
]
PATH_FIELDS: list[list[Any]] = [["tasks", 0, "fixture"], ["tasks", 0, "verifiers", 0, "path"],
                                ["tasks", 0, "verifiers", 1, "allowed", 0]]

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), children, max_size=5),
    max_leaves=25)
path_strings = st.one_of(
    st.lists(st.sampled_from(list("ab./\\:~C \x00\n*?") + ["..", "fixtures", "t1", "\u00e9", "\ud800"]),
             max_size=12).map("".join),
    st.text(max_size=16),
    st.sampled_from(["fixtures/t1", "fixtures/t1/", "./fixtures/t1", "fixtures//t1", "fixtures/t1/..",
                     "a" * 300, "fixtures/" + "b" * 300 + "/c", "/", "//", "\\\\?\\C:\\x", "C:", "\ud800x"]),
)


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    (tmp_path / "fixtures" / "t1").mkdir(parents=True)
    (tmp_path / "fixtures" / "t1" / "a.txt").write_text("x\n")
    return tmp_path


def load_or_suite_error(suite_dir: Path, document: Any) -> Any:
    """Write ``document`` as suite.json and load it; SuiteError is returned, anything else escapes."""
    (suite_dir / "suite.json").write_text(json.dumps(document), encoding="utf-8")
    try:
        suite = load_suite(suite_dir)
    except SuiteError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        return exc
    for task in suite.tasks:
        assert task.fixture.resolve().is_relative_to(suite_dir.resolve())
        assert task.fixture.resolve() != suite_dir.resolve()
    return suite


def put(document: Any, location: list[Any], value: Any) -> Any:
    if not location:
        return value
    node = document
    for part in location[:-1]:
        node = node[part]
    node[location[-1]] = value
    return document


@settings(SETTINGS, max_examples=40)
@given(document=json_values)
def test_arbitrary_documents_only_raise_suite_error(suite_dir: Path, document: Any) -> None:
    load_or_suite_error(suite_dir, document)


@SETTINGS
@given(location=st.sampled_from(LOCATIONS), value=json_values)
def test_a_replaced_field_only_raises_suite_error(suite_dir: Path, location: list[Any], value: Any) -> None:
    load_or_suite_error(suite_dir, put(copy.deepcopy(VALID), location, value))


@SETTINGS
@given(location=st.sampled_from(PATH_FIELDS), path=path_strings)
def test_random_paths_only_raise_suite_error(suite_dir: Path, location: list[Any], path: str) -> None:
    result = load_or_suite_error(suite_dir, put(copy.deepcopy(VALID), location, path))
    if isinstance(result, SuiteError) and location == ["tasks", 0, "fixture"] and path != "fixtures/t1":
        assert any("tasks[0].fixture" in p for p in result.problems), result.problems


@settings(SETTINGS, max_examples=30)
@given(extra=st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, min_size=1, max_size=3))
def test_extra_verifier_fields_only_raise_suite_error(suite_dir: Path, extra: dict[str, Any]) -> None:
    document = copy.deepcopy(VALID)
    document["tasks"][0]["verifiers"].append({"id": "x", "kind": "tool-sequence", **extra})
    load_or_suite_error(suite_dir, document)
