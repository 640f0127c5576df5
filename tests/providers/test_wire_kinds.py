"""Real providers' wire shapes as kinds: keep-alive frames, errors after HTTP 200, usage places,
continuation fields (lab.providers.wire, lab.providers.usage, lab.providers.openai_compat)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.errors import ProviderError, ProviderResponseInvalid
from lab.providers.base import Completion, ToolCall, Usage
from lab.providers.openai_compat import OpenAICompatProvider
from lab.providers.usage import merge_fields, parse_usage, usage_fields, usage_from_fields
from lab.providers.wire import DONE, parse_exchange
from tests.helpers.http_server import LocalHTTPServer, Request, Response

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64}
Make = Callable[..., OpenAICompatProvider]


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": choices, **extra})


def sse(*events: str, **extra: Any) -> dict[str, Any]:
    return {"type": "sse", "status": 200, "events": list(events), **extra}


def serve_sse(server: LocalHTTPServer, body: bytes) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"})
        response.write(body)

    server.handler = handler


# --- kind 1: SSE data payloads that carry nothing -------------------------------------------------

@pytest.mark.parametrize("keepalive", [": keepalive", "ping", "", "  "])
def test_keepalive_data_is_skipped_and_counted(keepalive: str) -> None:
    done = parse_exchange(sse(chunk({"content": "A"}), keepalive, chunk({}, "stop"), DONE))
    assert (done.content, done.finish_reason, done.complete, done.skipped_frames) == ("A", "stop", True, 1)


def test_keepalive_over_the_wire_reaches_the_parser(server: LocalHTTPServer, make_openai: Make) -> None:
    body = (f"data: {chunk({'content': 'A'})}\n\ndata: : keepalive\n\n"
            f"data: {chunk({}, 'stop')}\n\ndata: [DONE]\n\n").encode()
    serve_sse(server, body)
    done = parse_exchange(make_openai().send(dict(REQUEST)))
    assert (done.content, done.finish_reason, done.skipped_frames) == ("A", "stop", 1)


@pytest.mark.parametrize("broken", ['{"id": "c", "choices": [', "[1, 2"])
def test_payload_that_looks_like_json_still_fails_naming_the_event(broken: str) -> None:
    with pytest.raises(ProviderResponseInvalid, match="SSE event 1: not JSON"):
        parse_exchange(sse(chunk({"content": "A"}), broken, DONE))


@given(st.lists(st.sampled_from([": keepalive", "ping", "", ": x", "retry"]), max_size=6))
def test_any_number_of_keepalives_changes_nothing_but_the_count(frames: list[str]) -> None:
    events = [chunk({"content": "A"}), *frames, chunk({}, "stop"), DONE]
    done = parse_exchange(sse(*events))
    assert (done.content, done.finish_reason, done.skipped_frames) == ("A", "stop", len(frames))


# --- kind 2: an error or a cut-off after HTTP 200 ------------------------------------------------

def test_error_line_then_done_is_incomplete_and_keeps_the_message(server: LocalHTTPServer,
                                                                 make_openai: Make) -> None:
    serve_sse(server, b'error: {"code": 500, "message": "context size exceeded", "type": "server_error"}\n\n'
                      b"data: [DONE]\n\n")
    exchange = make_openai().send(dict(REQUEST))
    done = parse_exchange(exchange)
    assert done.complete is False
    assert done.stream_error == "context size exceeded (type server_error, code 500)"
    assert exchange["errors"] == ['{"code": 500, "message": "context size exceeded", "type": "server_error"}']


def test_done_alone_is_not_an_answer() -> None:
    assert parse_exchange(sse(chunk({"role": "assistant"}), DONE)).complete is False


def test_mid_stream_error_object_keeps_the_partial_answer() -> None:
    events = [chunk({"content": "Hel"}),
              chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "read_file",
                                                                             "arguments": '{"pa'}}]}),
              json.dumps({"error": {"code": 502, "message": "upstream died"}}), DONE]
    with pytest.raises(ProviderError, match="SSE event 2: in-band error after HTTP 200: upstream died") as caught:
        parse_exchange(sse(*events))
    assert caught.value.partial == {"content": "Hel", "toolCalls": [
        {"id": "call_1", "name": "read_file", "arguments": '{"pa'}]}


def test_truncated_stream_keeps_the_partial_text() -> None:
    done = parse_exchange(sse(chunk({"content": "Hel"}), chunk({"content": "lo"})))
    assert (done.complete, done.partial_json()) == (False, {"content": "Hello", "toolCalls": []})


# --- kind 3: usage in unusual places and shapes --------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ({"prompt_tokens": 19, "completion_tokens": 21, "cached_tokens": 10}, Usage(19, 21, 10)),
    ({"prompt_tokens": 50, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}, Usage(50, 5, 0)),
    ({"prompt_tokens": 50, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": None}},
     Usage(50, 5, None)),
    ({"prompt_tokens": 8, "completion_tokens": 862, "cache_read_input_tokens": 18901,
      "cache_creation_input_tokens": 1367}, Usage(20276, 862, 18901, 1367)),
    ({"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 40,
                                                                             "cache_write_tokens": 60},
      "cost": 0.0012}, Usage(100, 5, 40, 60, 0.0012)),
    ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 6}, Usage(10, 2, 6)),
    ({"prompt_tokens": 10, "completion_tokens": 2, "cost": None}, Usage(10, 2)),
    ({"prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 9}, Usage(5, 2, None)),
])
def test_usage_places(raw: dict[str, Any], expected: Usage) -> None:
    assert parse_usage(raw) == expected


def test_cached_share_above_one_is_impossible() -> None:
    with pytest.raises(ValueError, match="cached input 9 exceeds input 5"):
        Usage(5, 2, 9)


@pytest.mark.parametrize("where", ["x_groq", "choice"])
def test_usage_inside_x_groq_or_the_choice(where: str) -> None:
    usage = {"prompt_tokens": 7, "completion_tokens": 3}
    if where == "x_groq":
        last = chunk({}, "stop", x_groq={"usage": usage})
    else:
        last = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}]})
    assert parse_exchange(sse(chunk({"content": "A"}), last, DONE)).usage == Usage(7, 3)


def test_a_later_chunk_without_a_field_never_erases_it() -> None:
    events = [chunk({"content": "A"}, usage={"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}),
              chunk({}, "stop", usage={"completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": None}}),
              DONE]
    assert parse_exchange(sse(*events)).usage == Usage(9, 2, 4)


_USAGE_KEYS = st.fixed_dictionaries({}, optional={
    "prompt_tokens": st.integers(0, 10**6), "completion_tokens": st.integers(0, 10**6),
    "cached_tokens": st.integers(0, 10**6), "prompt_cache_hit_tokens": st.integers(0, 10**6),
    "cache_read_input_tokens": st.integers(0, 10**6), "cache_creation_input_tokens": st.integers(0, 10**6),
    "cost": st.floats(0, 10, allow_nan=False)})


@given(_USAGE_KEYS, st.data())
def test_usage_merged_in_any_chunking_gives_the_same_totals(raw: dict[str, Any], data: st.DataObject) -> None:
    keys = list(raw)
    owner = {key: data.draw(st.integers(0, 3), label=key) for key in keys}
    pieces = [{k: raw[k] for k in keys if owner[k] == n} for n in range(4)]
    merged: dict[str, int | float] = {}
    for piece in pieces:
        merged = merge_fields(merged, usage_fields(piece))
    assert usage_from_fields(merged) == parse_usage(raw)


# --- kind 4: provider data attached to a message goes back ---------------------------------------

def test_continuation_fields_of_a_json_answer_go_back_verbatim() -> None:
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "reasoning_content": "think", "refusal": None,
        "provider_blob": {"opaque": "x1"},
        "tool_calls": [{"id": "call_1", "type": "function", "extra_content": {"google": {"thought_signature": "sig"}},
                        "function": {"name": "read_file", "arguments": "{}", "signature": "s2"}}]}}]}
    done = parse_exchange({"type": "json", "status": 200, "body": body})
    assert done.assistant_message() == {
        "role": "assistant", "content": None, "provider_blob": {"opaque": "x1"},
        "tool_calls": [{"id": "call_1", "type": "function", "extra_content": {"google": {"thought_signature": "sig"}},
                        "function": {"name": "read_file", "arguments": "{}", "signature": "s2"}}]}
    assert done.assistant_message(include_reasoning=True)["reasoning_content"] == "think"


def test_continuation_fields_of_a_stream_are_assembled() -> None:
    events = [chunk({"role": "assistant", "reasoning_content": "r", "signature": "ab"}),
              chunk({"signature": "cd", "tool_calls": [{"index": 0, "id": "call_1", "extra_content": {"k": 1},
                                                         "function": {"name": "list_dir", "arguments": "{}"}}]}),
              chunk({}, "tool_calls"), DONE]
    done = parse_exchange(sse(*events))
    assert done.extra == {"signature": "abcd"}
    assert done.tool_calls == (ToolCall("call_1", "list_dir", "{}", extra={"extra_content": {"k": 1}}),)
    assert "reasoning_content" not in done.assistant_message()


def test_plain_answers_carry_no_extra_fields() -> None:
    done = parse_exchange(sse(chunk({"role": "assistant", "content": "hi"}), chunk({}, "stop"), DONE))
    assert done == Completion(content="hi", finish_reason="stop")


@given(st.lists(st.text(alphabet="abc ", min_size=1, max_size=4), min_size=1, max_size=6), st.data())
def test_a_stream_cut_anywhere_keeps_what_arrived_and_is_never_complete(pieces: list[str],
                                                                      data: st.DataObject) -> None:
    events = [chunk({"content": p}) for p in pieces] + [chunk({}, "stop"), DONE]
    cut = data.draw(st.integers(0, len(pieces)), label="cut")
    done = parse_exchange(sse(*events[:cut]))
    assert (done.complete, done.content) == (False, "".join(pieces[:cut]) or None)


_OPAQUE = st.dictionaries(st.sampled_from(["signature", "extra_content", "provider_blob", "thought"]),
                          st.text(min_size=1, max_size=8) | st.dictionaries(st.just("k"), st.integers()),
                          max_size=3)


@given(_OPAQUE, _OPAQUE)
def test_any_uninterpreted_field_goes_back_verbatim(message_extra: dict[str, Any],
                                                   call_extra: dict[str, Any]) -> None:
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, **message_extra,
        "tool_calls": [{"id": "c1", "type": "function", **call_extra,
                        "function": {"name": "list_dir", "arguments": "{}"}}]}}]}
    message = parse_exchange({"type": "json", "status": 200, "body": json.loads(json.dumps(body))}).assistant_message()
    assert message == body["choices"][0]["message"]
