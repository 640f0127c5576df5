"""lab.providers.wire: parsing edge cases and the builders' round trip."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.errors import ProviderError, ProviderResponseInvalid
from lab.providers.base import Completion, ToolCall, Usage
from lab.providers.encode import completion_to_exchange, to_sse_events
from lab.providers.usage import implausible_zero
from lab.providers.wire import DONE, parse_exchange, parse_usage


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0,
          **extra: Any) -> str:
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": choices, **extra})


def sse(*events: str) -> dict[str, Any]:
    return {"type": "sse", "status": 200, "events": list(events)}


def tool_delta(**entry: Any) -> dict[str, Any]:
    return {"tool_calls": [entry]}


@pytest.mark.parametrize("raw, expected", [
    (None, None),
    ({}, None),
    ({"total_tokens": 5}, None),
    ({"prompt_tokens": 0, "completion_tokens": 0}, Usage(0, 0, None)),
    ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}, Usage(10, 2, 4)),
    ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": None}, Usage(10, 2, None)),
    ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 6}, Usage(10, 2, 6)),
    ({"prompt_tokens": True, "completion_tokens": -1}, None),
    ({"input_tokens": 9, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 3}}, Usage(9, 1, 3)),
])
def test_parse_usage(raw: Any, expected: Usage | None) -> None:
    assert parse_usage(raw) == expected


def test_no_usage_chunk_leaves_usage_none() -> None:
    completion = parse_exchange(sse(chunk({"content": "hi"}, "stop"), DONE))
    assert completion.usage is None


def test_index_reused_with_a_new_id_starts_a_new_call() -> None:
    completion = parse_exchange(sse(
        chunk(tool_delta(index=0, id="a", function={"name": "f", "arguments": "{}"})),
        chunk(tool_delta(index=0, id="b", function={"name": "g", "arguments": "{"})),
        chunk(tool_delta(index=0, function={"arguments": "}"})),
        chunk({}, "tool_calls"), DONE))
    assert completion.tool_calls == (ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}"))


def test_repeated_name_and_id_do_not_duplicate() -> None:
    completion = parse_exchange(sse(
        chunk(tool_delta(index=0, id="a", function={"name": "f", "arguments": '{"x":'})),
        chunk(tool_delta(index=0, id="a", function={"name": "f", "arguments": "1}"})),
        chunk({}, "tool_calls"), DONE))
    assert completion.tool_calls == (ToolCall("a", "f", '{"x":1}'),)


def test_missing_ids_get_positional_ids() -> None:
    completion = parse_exchange(sse(
        chunk(tool_delta(index=0, function={"name": "f", "arguments": "{}"})),
        chunk(tool_delta(index=1, function={"name": "g", "arguments": "{}"})), DONE))
    assert [c.id for c in completion.tool_calls] == ["call_0", "call_1"]


def test_parsed_object_arguments_are_encoded() -> None:
    completion = parse_exchange(sse(
        chunk(tool_delta(index=0, id="a", function={"name": "f", "arguments": {"path": "x"}})), DONE))
    assert json.loads(completion.tool_calls[0].arguments) == {"path": "x"}


def test_other_choices_are_ignored() -> None:
    completion = parse_exchange(sse(chunk({"content": "zero"}), chunk({"content": "one"}, index=1),
                                    chunk({}, "stop"), DONE))
    assert completion.content == "zero"


def test_events_after_done_are_ignored() -> None:
    completion = parse_exchange(sse(chunk({"content": "a"}, "stop"), DONE, "not json"))
    assert completion.content == "a"


def test_empty_stream_is_incomplete() -> None:
    assert parse_exchange(sse()) == Completion(content=None, finish_reason=None, complete=False)


def test_finish_reason_without_done_is_complete() -> None:
    completion = parse_exchange(sse(chunk({"content": "a"}), chunk({}, "length")))
    assert (completion.complete, completion.finish_reason) == (True, "length")


def test_empty_finish_reason_without_done_is_incomplete() -> None:
    completion = parse_exchange(sse(chunk({"content": "a"}, "")))
    assert (completion.complete, completion.finish_reason) == (False, "")


@pytest.mark.parametrize("error, text", [
    ({"message": "overloaded", "code": 529}, "overloaded (code 529)"),
    ("rate limit reached", "rate limit reached"),
])
def test_in_band_error_forms(error: Any, text: str) -> None:
    with pytest.raises(ProviderError, match="in-band error") as caught:
        parse_exchange(sse(chunk({"content": "a"}), json.dumps({"error": error})))
    assert caught.value.cause == "server"
    assert text in str(caught.value)


@pytest.mark.parametrize("exchange, where", [
    ("nope", "exchange"),
    ({"type": "xml"}, '"type"'),
    ({"type": "sse", "events": "data"}, '"events"'),
    ({"type": "sse", "events": ["{"]}, "SSE event 0: not JSON"),
    ({"type": "sse", "events": ["[1]"]}, "SSE event 0: expected an object"),
    ({"type": "sse", "events": ['{"choices": {}}']}, '"choices"'),
    ({"type": "sse", "events": ['{"choices": [{"delta": []}]}']}, '"delta"'),
    ({"type": "json", "body": []}, "response body"),
    ({"type": "json", "body": {"choices": []}}, '"choices"'),
    ({"type": "json", "body": {"choices": [{"message": "hi"}]}}, '"choices[0].message"'),
    ({"type": "json", "body": {"choices": [{"message": {"content": 3}}]}}, "content"),
    ({"type": "json", "body": {"choices": [{"message": {"tool_calls": [1]}}]}}, "tool_calls[0]"),
])
def test_invalid_exchanges_name_the_place(exchange: Any, where: str) -> None:
    with pytest.raises(ProviderResponseInvalid, match=f".*{where}".replace("[", r"\[").replace("]", r"\]")):
        parse_exchange(exchange)


def test_sse_builder_emits_real_shapes() -> None:
    completion = Completion(content=None, finish_reason="tool_calls", usage=Usage(10, 3, None),
                            tool_calls=(ToolCall("call_0_0", "read_file", '{"path": "some/long/name.py"}'),))
    events = to_sse_events(completion, response_id="r", model="m", piece_chars=8)
    chunks = [json.loads(e) for e in events[:-1]]
    assert events[-1] == DONE
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[1:-2]]
    assert calls[0] == {"index": 0, "id": "call_0_0", "type": "function",
                        "function": {"name": "read_file", "arguments": ""}}
    assert len(calls) > 3 and all(set(c) == {"index", "function"} for c in calls[1:])
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 10
    assert all(c["created"] == 0 and c["id"] == "r" for c in chunks)


_text = st.text(min_size=1, max_size=60)
_usage = st.none() | st.integers(0, 10**6).flatmap(lambda input_tokens: st.builds(
    Usage, st.just(input_tokens), st.integers(0, 10**6), st.none() | st.integers(0, input_tokens),
    st.none() | st.integers(0, 10**6), st.none() | st.floats(0, 100, allow_nan=False)))
_calls = st.lists(st.builds(ToolCall, st.from_regex(r"call_[0-9]{1,3}", fullmatch=True),
                            st.from_regex(r"[a-z_]{1,12}", fullmatch=True), st.text(max_size=80)),
                  max_size=3).map(tuple)
_completions = st.builds(Completion, content=st.none() | _text, tool_calls=_calls,
                         finish_reason=st.sampled_from(["stop", "tool_calls", "length", ""]),
                         usage=_usage, reasoning_content=st.none() | _text)


@given(completion=_completions, stream=st.booleans(), piece_chars=st.integers(1, 20))
def test_builders_round_trip(completion: Completion, stream: bool, piece_chars: int) -> None:
    exchange = completion_to_exchange(completion, stream=stream, response_id="r", model="m",
                                      piece_chars=piece_chars)
    # A stream with no finish reason, no content and no tool call is no answer.
    complete = not stream or bool(completion.finish_reason or completion.content or completion.tool_calls)
    # Zeros that cannot be measurements (0 input tokens; 0 output beside output) read as not reported.
    zero = implausible_zero(completion.usage, bool(completion.content or completion.tool_calls))
    expected = replace(completion, complete=complete, usage=None if zero else completion.usage, zero_usage=zero)
    assert parse_exchange(json.loads(json.dumps(exchange))) == expected
