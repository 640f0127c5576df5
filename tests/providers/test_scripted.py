"""ScriptedProvider and load_script (SPEC P2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lab.errors import LabError, SuiteError
from lab.providers.base import ToolCall, Usage
from lab.providers.scripted import GIVE_UP, ScriptedProvider, load_script
from lab.providers.wire import DONE, parse_exchange

SHA_OLD = "a" * 64
SHA_NEW = "b" * 64
SCRIPT: dict[str, Any] = {"schemaVersion": 1, "taskId": "fix-off-by-one", "turns": [
    {"toolCalls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"toolCalls": [{"name": "edit_file", "arguments": {
        "path": "calc.py", "sha256": "@sha256:calc.py", "old": "range(n)", "new": "range(1, n + 1)"}},
        {"name": "run_command", "arguments": {"argv": ["python3", "test_calc.py"]}}]},
    {"content": "DONE: fixed the off-by-one in total()."},
]}


def request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "scripted", "messages": [{"role": "system", "content": "You fix code."},
                                              {"role": "user", "content": "Fix calc.py"}, *messages],
            "tools": [], "max_tokens": 1000}


def tool_result(path: str, sha: str, tail: str = "lines: 3\n\ncode") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "x", "content": f"path: {path}\nsha256: {sha}\n{tail}"}


def play(provider: ScriptedProvider, req: dict[str, Any], calls: int) -> list[dict[str, Any]]:
    return [provider.send(copy.deepcopy(req)) for _ in range(calls)]


def test_turns_are_answered_in_order_with_deterministic_ids() -> None:
    completions = [parse_exchange(e) for e in play(ScriptedProvider(SCRIPT), request(), 3)]
    assert completions[0].tool_calls == (ToolCall("call_0_0", "read_file", '{"path": "calc.py"}'),)
    assert [c.id for c in completions[1].tool_calls] == ["call_1_0", "call_1_1"]
    assert completions[1].finish_reason == "tool_calls"
    assert (completions[2].content, completions[2].tool_calls, completions[2].finish_reason) == \
        ("DONE: fixed the off-by-one in total().", (), "stop")


def test_sha256_placeholder_takes_the_latest_reported_hash() -> None:
    provider = ScriptedProvider(SCRIPT)
    provider.send(request())
    req = request(tool_result("calc.py", SHA_OLD), tool_result("other.py", "c" * 64),
                  tool_result("./calc.py", SHA_NEW, "bytes: 10"))
    arguments = json.loads(parse_exchange(provider.send(req)).tool_calls[0].arguments)
    assert arguments["sha256"] == SHA_NEW


def test_sha256_placeholder_without_report_stays_literal() -> None:
    provider = ScriptedProvider(SCRIPT)
    provider.send(request())
    req = request({"role": "user", "content": f"path: calc.py\nsha256: {SHA_OLD}"},  # not a tool message
                  {"role": "tool", "tool_call_id": "x", "content": "error: no such file"})
    arguments = json.loads(parse_exchange(provider.send(req)).tool_calls[0].arguments)
    assert arguments["sha256"] == "@sha256:calc.py"


def test_placeholders_resolve_at_any_depth_and_raw_arguments_pass_verbatim() -> None:
    script = {"schemaVersion": 1, "taskId": "t", "turns": [{"toolCalls": [
        {"name": "multi", "arguments": {"edits": [{"sha256": "@sha256:calc.py"}]}},
        {"name": "edit_file", "arguments": '{"path": "calc.py", "sha256": '}]}]}
    calls = parse_exchange(ScriptedProvider(script).send(request(tool_result("calc.py", SHA_OLD)))).tool_calls
    assert json.loads(calls[0].arguments) == {"edits": [{"sha256": SHA_OLD}]}
    assert calls[1].arguments == '{"path": "calc.py", "sha256": '


def test_exhausted_script_gives_up() -> None:
    completions = [parse_exchange(e) for e in play(ScriptedProvider(SCRIPT), request(), 5)]
    assert [(c.content, c.tool_calls) for c in completions[3:]] == [(GIVE_UP, ()), (GIVE_UP, ())]


def test_compaction_calls_do_not_consume_turns() -> None:
    provider = ScriptedProvider(SCRIPT)
    summary = parse_exchange(provider.send(request(), purpose="compaction"))
    assert summary.content == "Summary of 2 earlier messages."
    assert summary.tool_calls == ()
    assert parse_exchange(provider.send(request())).tool_calls[0].name == "read_file"


def test_ids_of_responses_are_deterministic() -> None:
    provider = ScriptedProvider(SCRIPT)
    bodies = [provider.send(request())["body"], provider.send(request(), purpose="compaction")["body"],
              provider.send(request())["body"]]
    assert [(b["id"], b["created"]) for b in bodies] == \
        [("scripted-0", 0), ("scripted-compaction-0", 0), ("scripted-1", 0)]


def test_usage_is_reported_deterministically_unless_disabled() -> None:
    script = {"schemaVersion": 1, "taskId": "t", "turns": [
        {"content": "first answer"}, {"content": "second", "reportUsage": False, "finishReason": "length"}]}
    provider = ScriptedProvider(script)
    first, second = (parse_exchange(provider.send(request())) for _ in range(2))
    assert first.usage == Usage(input_tokens=(4 + 3) + (4 + 2), output_tokens=len("first answer") // 4)
    assert (second.usage, second.finish_reason) == (None, "length")


def test_usage_ignores_the_length_of_noisy_words() -> None:
    short = request(tool_result("calc.py", SHA_OLD, "ran in /tmp/a 0.1s"))
    long = request(tool_result("calc.py", SHA_OLD, "ran in /tmp/pytest-of-root/pytest-12/x 0.0123s"))
    usages = [parse_exchange(ScriptedProvider(SCRIPT).send(r)).usage for r in (short, long)]
    assert usages[0] == usages[1]


@pytest.mark.parametrize("turn", [0, 1, 2, 3])
def test_stream_mode_parses_to_the_json_mode_completion(turn: int) -> None:
    req = request(tool_result("calc.py", SHA_OLD))
    as_json = play(ScriptedProvider(SCRIPT), req, turn + 1)[-1]
    as_sse = play(ScriptedProvider(SCRIPT, stream=True), req, turn + 1)[-1]
    assert (as_json["type"], as_sse["type"]) == ("json", "sse")
    assert parse_exchange(as_sse) == parse_exchange(as_json)


def test_stream_mode_emits_split_arguments_and_a_usage_only_chunk() -> None:
    provider = ScriptedProvider(SCRIPT, stream=True)
    provider.send(request())
    events = provider.send(request(tool_result("calc.py", SHA_OLD)))["events"]
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    first_call_pieces = [d["tool_calls"][0] for d in deltas
                         if "tool_calls" in d and d["tool_calls"][0]["index"] == 0]
    assert first_call_pieces[0]["id"] == "call_1_0" and first_call_pieces[0]["function"]["name"] == "edit_file"
    assert len(first_call_pieces) > 2
    assert all("id" not in p and "name" not in p["function"] for p in first_call_pieces[1:])
    assert chunks[-1]["choices"] == [] and "usage" in chunks[-1]
    assert events[-1] == DONE


@pytest.mark.parametrize("stream", [False, True])
def test_exchanges_are_byte_identical_across_runs(stream: bool) -> None:
    def record() -> str:
        provider = ScriptedProvider(copy.deepcopy(SCRIPT), stream=stream)
        exchanges = [provider.send(request(tool_result("calc.py", SHA_OLD))) for _ in range(4)]
        exchanges.append(provider.send(request(), purpose="compaction"))
        return json.dumps(exchanges, sort_keys=True, indent=2, ensure_ascii=False)

    assert record() == record()


def test_load_script_reads_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "fix-off-by-one.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    assert load_script(path) == SCRIPT


@pytest.mark.parametrize("mutate, field", [
    (lambda s: s.update(schemaVersion=2), '"schemaVersion": expected <= 1'),
    (lambda s: s.update(schemaVersion="1"), '"schemaVersion": expected 1'),
    (lambda s: s.pop("taskId"), '"taskId": expected a non-empty string, got nothing'),
    (lambda s: s.update(turns={}), '"turns": expected a list'),
    (lambda s: s.update(extra=1), '"extra": unknown field'),
    (lambda s: s["turns"].append({}), '"turns[3]": expected at least one of'),
    (lambda s: s["turns"].append({"content": ""}), '"turns[3].content": expected a non-empty string'),
    (lambda s: s["turns"].append({"content": "x", "tool_calls": []}), '"turns[3].tool_calls": unknown field'),
    (lambda s: s["turns"][0].update(toolCalls=[]), '"turns[0].toolCalls": expected a non-empty list'),
    (lambda s: s["turns"][0]["toolCalls"][0].pop("name"), '"turns[0].toolCalls[0].name": expected'),
    (lambda s: s["turns"][1]["toolCalls"][1].update(arguments=[1]), '"turns[1].toolCalls[1].arguments"'),
    (lambda s: s["turns"][2].update(reportUsage="no"), '"turns[2].reportUsage": expected true or false'),
])
def test_bad_script_names_file_and_field(mutate: Any, field: str, tmp_path: Path) -> None:
    script = copy.deepcopy(SCRIPT)
    mutate(script)
    path = tmp_path / "fix-off-by-one.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        load_script(path)
    assert any(p.startswith(f"{path}: field {field}") for p in caught.value.problems), caught.value.problems


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"schemaVersion": 1,\n "turns": [}', encoding="utf-8")
    with pytest.raises(LabError, match=f"{path}: line 2 column"):
        load_script(path)


def test_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(LabError, match=f"{tmp_path / 'nope.json'}: cannot read"):
        load_script(tmp_path / "nope.json")


def test_constructor_validates_too() -> None:
    with pytest.raises(SuiteError, match='<script>: field "turns"'):
        ScriptedProvider({"schemaVersion": 1, "taskId": "t"})
