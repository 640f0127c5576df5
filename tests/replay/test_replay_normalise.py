"""Request normalisation: volatile fields dropped, volatile text masked, numbers canonical."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from lab.errors import ConfigError
from lab.replay.normalise import MaskRule, RequestNormaliser, canonical_json, fingerprint, task_rules

NORMALISE = RequestNormaliser()


def user_text(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def test_chat_volatile_fields_are_dropped_and_configuration_kept() -> None:
    body = {"model": "m", "messages": [], "user": "u-1", "metadata": {"session": "s"},
            "prompt_cache_key": "k", "safety_identifier": "h", "stream": True,
            "stream_options": {"include_usage": True}, "temperature": 0.2, "seed": 7}

    assert NORMALISE("chat", body) == {"model": "m", "messages": [], "stream": True,
                                       "stream_options": {"include_usage": True}, "temperature": 0.2, "seed": 7}


def test_responses_volatile_fields_and_client_item_ids_are_dropped() -> None:
    body = {"model": "m", "prompt_cache_key": "k", "client_metadata": {"x": "y"},
            "previous_response_id": "resp_1",
            "input": [{"type": "message", "id": "msg_abc", "role": "user", "content": "hi"},
                      {"type": "function_call_output", "id": "fco_1", "call_id": "c1", "output": "ok"}]}

    assert NORMALISE("responses", body) == {
        "model": "m", "previous_response_id": "resp_1",
        "input": [{"type": "message", "role": "user", "content": "hi"},
                  {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}


def test_the_input_is_not_modified() -> None:
    body = {"model": "m", "input": [{"id": "msg_1", "content": "2025-01-01"}], "user": "u"}
    before = copy.deepcopy(body)

    NORMALISE("responses", body)

    assert body == before


@pytest.mark.parametrize(("text", "masked"), [
    ("id 0b7e1c9a-5c3d-4e2f-9a1b-2c3d4e5f6a7b here", "id <uuid> here"),
    ("at 2025-03-04T05:06:07.123+01:00.", "at <datetime>."),
    ("on 2025-03-04 05:06 local", "on <datetime> local"),
    ("today is 2025-03-04", "today is <date>"),
    ("clock 12:34:56", "clock <time>"),
    ("<current_date>Mon 3 March</current_date>", "<current_date>…</current_date>"),
    ("<timezone>CEST</timezone>", "<timezone>…</timezone>"),
    ("tz Europe/Berlin and America/Argentina/Buenos_Aires", "tz <tz> and <tz>"),
    ("offset UTC+02:00", "offset <tz>"),
    ("Wall time: 0.1234 seconds", "Wall time: <duration> seconds"),
    ("1 passed in 0.02s", "1 passed in <duration>"),
    ("Chunk ID: 9f8e7d6c", "Chunk ID: <id>"),
    ("ids msg_68a1b2c3d4 fco_0a1b2c3d4e5f call_AbCd1234EfGh", "ids msg_<id> fco_<id> call_<id>"),
    ("chatcmpl-Ab12Cd34Ef56", "chatcmpl-<id>"),
])
def test_volatile_text_is_masked(text: str, masked: str) -> None:
    assert NORMALISE("chat", user_text(text))["messages"][0]["content"] == masked


@pytest.mark.parametrize("text", [
    "def call_function(): pass", "version 3.11.7", "sleep 5 seconds", "sha256 " + "ab" * 32, "call_0_1"])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert NORMALISE("chat", user_text(text))["messages"][0]["content"] == text


def test_masks_touch_the_conversation_only() -> None:
    body = {"model": "gpt-4o-2024-08-06", "messages": [],
            "tools": [{"type": "function", "function": {"name": "t", "description": "on 2025-01-01"}}]}

    assert NORMALISE("chat", body) == body


def test_responses_instructions_and_tool_output_are_masked() -> None:
    body = {"model": "m", "instructions": "Now: 2025-01-01T00:00:00Z",
            "input": [{"type": "function_call_output", "call_id": "call_Ab12Cd34", "output":
                       "Chunk ID: 3fa2\nWall time: 0.002 seconds\nok"}]}

    normalised = NORMALISE("responses", body)

    assert normalised["instructions"] == "Now: <datetime>"
    assert normalised["input"][0] == {"type": "function_call_output", "call_id": "call_<id>",
                                      "output": "Chunk ID: <id>\nWall time: <duration> seconds\nok"}


def test_task_rules_run_before_the_builtin_masks() -> None:
    rules = task_rules([{"pattern": r"pid \d+", "replace": "pid <pid>"},
                        {"pattern": r"took (\d+\.\d+)s", "replace": r"took <t>"}])

    text = NORMALISE.extended(rules=rules)("chat", user_text("pid 4242 took 0.52s"))["messages"][0]["content"]

    assert text == "pid <pid> took <t>"


def test_the_workspace_path_is_replaced_everywhere() -> None:
    normalise = RequestNormaliser(workspace=("/tmp/run-1/work", "/tmp/run-1"))
    body = {"model": "m", "messages": [{"role": "user", "content": "cd /tmp/run-1/work/src"}],
            "tools": [{"type": "function", "function": {"name": "t", "description": "root /tmp/run-1"}}]}

    normalised = normalise("chat", body)

    assert normalised["messages"][0]["content"] == "cd <workspace>/src"
    assert normalised["tools"][0]["function"]["description"] == "root <workspace>"


def test_a_preset_can_drop_more_fields() -> None:
    normalise = NORMALISE.extended(drop={"chat": ["messages[*].name", "extra_body.trace"]})
    body = {"model": "m", "extra_body": {"trace": "t-1", "keep": 1},
            "messages": [{"role": "user", "name": "alice", "content": "x"}]}

    assert normalise("chat", body) == {"model": "m", "extra_body": {"keep": 1},
                                       "messages": [{"role": "user", "content": "x"}]}


@pytest.mark.parametrize("path", ["input[0].id", "a..b", "", "[*]"])
def test_a_bad_drop_path_is_a_config_error(path: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(repr(path))):
        NORMALISE.extended(drop={"chat": [path]})


@pytest.mark.parametrize(("rule", "message"), [
    ({"pattern": "(", "replace": "x"}, r"replayNormalize\[0\]"),
    ({"pattern": "a", "replace": r"\1"}, r"replayNormalize\[0\].*invalid group reference"),
    ({"pattern": "a"}, r"replayNormalize\[0\]: expected \{pattern: str, replace: str\}"),
])
def test_a_bad_task_rule_is_a_config_error_naming_it(rule: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        task_rules([rule])


def test_an_integral_float_equals_the_int_and_true_stays_distinct_from_1() -> None:
    assert fingerprint({"n": 1.0, "z": -0.0}) == fingerprint({"n": 1, "z": 0})
    assert fingerprint({"n": True}) != fingerprint({"n": 1})
    assert fingerprint({"n": 1.5}) != fingerprint({"n": 1})


def test_canonical_json_is_sorted_compact_and_keeps_utf8() -> None:
    assert canonical_json({"b": [2.0, "é"], "a": None}) == '{"a":null,"b":[2,"é"]}'


def test_a_mask_rule_can_be_built_from_strings() -> None:
    assert MaskRule.of(r"(\d+) ms", r"<n> ms", "timing").apply("took 12 ms") == "took <n> ms"
