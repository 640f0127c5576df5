"""The suite loader's last gaps (issue kinds): ids ending in a newline, control characters, lone
surrogates, integral floats, huge quoted values, and validation linear in the suite.

Each given input is a test with its exact expected outcome; each kind also has a property.
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
from lab.suites import validate
from lab.suites.load import load_suite
from lab.suites.text import excerpt, read_number

SETTINGS = settings(max_examples=25, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

VALID: dict[str, Any] = {
    "schemaVersion": 1, "suiteId": "faults", "suiteVersion": "1.0.0", "description": "d",
    "tasks": [{"id": "t1", "prompt": "p", "fixture": "fixtures/t1",
               "budget": {"maxTurns": 2, "maxWallMs": 1000}, "policy": {"mode": "auto", "allow": ["write"]},
               "verifiers": [{"id": "c", "kind": "file-contains", "path": "a.txt", "text": "x"},
                             {"id": "r", "kind": "command", "argv": ["true"], "timeoutMs": 1000}]}],
}


def write(tmp_path: Path, doc: Any, raw: str | None = None) -> Path:
    (tmp_path / "fixtures" / "t1").mkdir(parents=True, exist_ok=True)
    (tmp_path / "fixtures" / "t1" / "a.txt").write_text("x\n")
    (tmp_path / "suite.json").write_text(raw if raw is not None else json.dumps(doc), encoding="utf-8")
    return tmp_path


def problems(tmp_path: Path, doc: Any = None, raw: str | None = None) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(write(tmp_path, doc, raw))
    return info.value.problems[1:]


def with_value(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


ID_FIELDS = [["suiteId"], ["tasks", 0, "id"], ["tasks", 0, "verifiers", 0, "id"], ["tasks", 0, "agent"]]


# -- ids and paths: anchored patterns, no control characters ---------------------------------------

@pytest.mark.parametrize("field", ID_FIELDS, ids=lambda f: ".".join(map(str, f)))
def test_an_id_ending_in_a_newline_is_refused(tmp_path: Path, field: list[Any]) -> None:
    found = problems(tmp_path, with_value(field, "t\n"))
    assert "'t\\n' does not match" in found[0] and "control characters are not allowed" in found[0]


@pytest.mark.parametrize("field", ID_FIELDS + [["tasks", 0, "fixture"], ["tasks", 0, "verifiers", 0, "path"]],
                         ids=lambda f: ".".join(map(str, f)))
@given(control=st.sampled_from([chr(c) for c in [*range(32), 127]]), where=st.sampled_from(["start", "mid", "end"]))
@SETTINGS
def test_a_control_character_anywhere_in_an_id_or_path_is_refused(tmp_path: Path, field: list[Any], control: str,
                                                                  where: str) -> None:
    name = {"start": control + "t1", "mid": "t" + control + "1", "end": "t1" + control}[where]
    if field[-1] in {"fixture", "path"}:
        name = "fixtures/" + name if field[-1] == "fixture" else name
    found = problems(tmp_path, with_value(field, name))
    assert found, name


def test_run_ids_and_plain_names_refuse_a_final_newline() -> None:
    from lab.store import is_plain_name

    assert is_plain_name("smoke.abc.k1.s0")
    assert not is_plain_name("smoke.abc.k1.s0\n")


# -- lone surrogates: refused at load time, naming the field ---------------------------------------

@pytest.mark.parametrize(("field", "where"), [
    ('"prompt": "p"', "tasks[0].prompt"), ('"description": "d"', "description"),
    ('"text": "x"', "tasks[0].verifiers[0].text")])
def test_a_lone_surrogate_is_refused_naming_the_field(tmp_path: Path, field: str, where: str) -> None:
    raw = json.dumps(VALID).replace(field, field[:-1] + '\\ud800"')
    found = problems(tmp_path, raw=raw)
    assert any(where in p and "lone surrogate" in p for p in found), found


@given(code=st.integers(min_value=0xD800, max_value=0xDFFF))
@SETTINGS
def test_any_lone_surrogate_in_a_prompt_is_refused(tmp_path: Path, code: int) -> None:
    raw = json.dumps(VALID).replace('"prompt": "p"', f'"prompt": "p\\u{code:04x}"')
    assert any("tasks[0].prompt" in p and "lone surrogate" in p for p in problems(tmp_path, raw=raw))


def test_a_surrogate_pair_is_ordinary_text(tmp_path: Path) -> None:
    raw = json.dumps(VALID).replace('"prompt": "p"', '"prompt": "p \\ud83d\\ude00"')
    assert load_suite(write(tmp_path, None, raw)).tasks[0].prompt == "p \U0001f600"


# -- integral floats: read as the integer they equal --------------------------------------------

def test_timeout_of_1000_point_0_loads_as_the_integer_1000(tmp_path: Path) -> None:
    raw = json.dumps(VALID).replace('"timeoutMs": 1000', '"timeoutMs": 1000.0')
    suite = load_suite(write(tmp_path, None, raw))
    timeout = suite.tasks[0].verifiers[1]["timeoutMs"]
    assert timeout == 1000 and type(timeout) is int


@given(value=st.integers(min_value=1, max_value=10_000), spelling=st.sampled_from(["{}.0", "{}.000", "{}e0"]))
@SETTINGS
def test_every_integral_float_in_an_integer_field_becomes_an_int(tmp_path: Path, value: int, spelling: str) -> None:
    raw = json.dumps(VALID).replace('"maxTurns": 2', f'"maxTurns": {spelling.format(value)}')
    turns = load_suite(write(tmp_path, None, raw)).tasks[0].budget["maxTurns"]
    assert turns == value and type(turns) is int


def test_a_fraction_in_an_integer_field_is_refused(tmp_path: Path) -> None:
    raw = json.dumps(VALID).replace('"maxTurns": 2', '"maxTurns": 2.5')
    assert any("tasks[0].budget.maxTurns: 2.5 is not of type 'integer'" in p for p in problems(tmp_path, raw=raw))


def test_read_number_keeps_fractions_and_refuses_overflow() -> None:
    assert read_number("0.5") == 0.5 and type(read_number("2.0")) is int
    with pytest.raises(ValueError, match="out of range"):
        read_number("1e400")


# -- huge values are quoted as excerpts ----------------------------------------------------------

@pytest.mark.parametrize("field", [["suiteId"], ["tasks", 0, "id"], ["tasks", 0, "fixture"],
                                   ["tasks", 0, "budget", "maxTurns"], ["suiteVersion"],
                                   ["tasks", 0, "verifiers", 0, "path"], ["tasks", 0, "agent"]],
                         ids=lambda f: ".".join(map(str, f)))
def test_a_400_kb_value_becomes_a_short_excerpt_with_its_length(tmp_path: Path, field: list[Any]) -> None:
    found = problems(tmp_path, with_value(field, "x" * 400_000 + "/"))
    assert found and all(len(p) < 600 for p in found), [len(p) for p in found]
    assert any("(400,001 chars)" in p for p in found), found


@given(size=st.integers(min_value=100, max_value=5000), char=st.sampled_from(["a", "é", "\t", "✓"]))
@SETTINGS
def test_no_problem_line_grows_with_the_value(tmp_path: Path, size: int, char: str) -> None:
    found = problems(tmp_path, with_value(["tasks", 0, "prompt"], 12) | {"suiteId": char * size})
    assert all(len(p) < 600 for p in found)


def test_excerpt_keeps_short_values_whole() -> None:
    assert excerpt("abc") == "'abc'"
    assert excerpt("a" * 100) == "'" + "a" * 59 + f"… (100 chars)"


# -- large suites: the compiled first pass accepts and refuses exactly what jsonschema does ---------

def big(n: int) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    doc["tasks"] = [{**copy.deepcopy(VALID["tasks"][0]), "id": f"t{i}"} for i in range(n)]
    return doc


@given(location=st.sampled_from([["schemaVersion"], ["suiteId"], ["tasks", 3, "budget", "maxTurns"],
                                 ["tasks", 7, "verifiers", 0, "kind"], ["tasks", 7, "verifiers", 1, "argv"],
                                 ["tasks", 2, "policy", "mode"], ["tasks", 9, "verifiers", 1, "timeoutMs"],
                                 ["tasks", 5, "id"], ["tasks", 4, "extra"], ["description"]]),
       value=st.none() | st.booleans() | st.integers(-5, 700_000) | st.text(max_size=5) | st.lists(st.integers(), max_size=2))
@SETTINGS
def test_fast_and_full_validation_find_the_same_problems(location: list[Any], value: Any) -> None:
    doc = big(12)
    target: Any = doc
    for part in location[:-1]:
        target = target[part]
    target[location[-1]] = value
    full = validate.schema_problems(doc, fast_from=10**9)
    fast = validate.schema_problems(doc, fast_from=0)
    assert sorted(map(str, fast)) == sorted(map(str, full))


def test_a_valid_large_suite_passes_the_compiled_first_pass() -> None:
    assert validate.schema_problems(big(300)) == []


def test_duplicate_ids_are_found_in_one_pass_over_many(tmp_path: Path) -> None:
    doc = big(3)
    doc["tasks"][2]["id"] = "t0"
    doc["tasks"][1]["verifiers"][1]["id"] = "c"
    found = problems(tmp_path, doc)
    assert any("tasks[2].id: duplicate task id 't0' (also tasks[0])" in p for p in found)
    assert any("tasks[1].verifiers[1].id: duplicate verifier id 'c' (also verifiers[0])" in p for p in found)
