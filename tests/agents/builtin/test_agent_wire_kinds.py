"""The loop keeps what an unfinished answer carried, counts skipped frames, replaces unencodable
text and sends continuation data back (lab.agents.builtin.loop with real wire exchanges)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.agents.builtin.loop import AgentSettings
from tests.agents.builtin.agent_helpers import incidents, of_type, run


class Served:
    """A provider serving fixed SSE exchanges in order (the wire text a server sent)."""

    name = "served"

    def __init__(self, *streams: list[str]) -> None:
        self.streams = list(streams)
        self.requests: list[dict[str, Any]] = []

    def send(self, request: dict[str, Any], *, purpose: str = "main",
             timeout_s: float | None = None) -> dict[str, Any]:
        self.requests.append(json.loads(json.dumps(request)))
        return {"type": "sse", "status": 200, "events": self.streams.pop(0)}


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def tool(name: str, arguments: str, **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "id": "call_1", **extra,
                            "function": {"name": name, "arguments": arguments}}]}


def test_mid_stream_error_keeps_the_partial_answer(workspace: Path) -> None:
    provider = Served([chunk({"content": "I will fix"}), chunk(tool("read_file", '{"pa')),
                       json.dumps({"error": {"code": 502, "message": "bad gateway"}}), "[DONE]"])
    result = run(workspace, provider)
    partial = {"content": "I will fix", "toolCalls": [{"id": "call_1", "name": "read_file", "arguments": '{"pa'}]}
    assert result.error is not None and result.error["partial"] == partial
    assert of_type(result, "model_call")[0]["partial"] == partial


def test_cut_off_stream_keeps_the_partial_text_in_the_event(workspace: Path) -> None:
    result = run(workspace, Served([chunk({"content": "Hel"}), ": keepalive", chunk({"content": "lo"})]))
    assert result.error is not None and result.error["kind"] == "incomplete_response"
    event = of_type(result, "model_call")[0]
    assert (event["partial"]["content"], event["skippedFrames"]) == ("Hello", 1)


def test_surrogates_in_arguments_and_answer_are_replaced_and_noted(workspace: Path) -> None:
    provider = Served([chunk(tool("write_file", '{"path": "s.txt", "content": "a\\udc00b"}'), "tool_calls"), "[DONE]"],
                      ['{"choices": [{"index": 0, "delta": {"content": "DONE: \\udc00"}, "finish_reason": "stop"}]}'])
    result = run(workspace, provider)
    assert (workspace / "s.txt").read_text(encoding="utf-8") == "a\ufffdb"
    assert result.final_message == "DONE: \ufffd"
    assert len(incidents(result, "unencodable_text")) == 2


def test_continuation_fields_go_back_and_reasoning_only_when_configured(workspace: Path) -> None:
    first = [chunk({"reasoning_content": "think", **tool("list_dir", "{}", extra_content={"sig": "s1"})}),
             chunk({}, "tool_calls"), "[DONE]"]
    last = [chunk({"content": "DONE: ok"}, "stop"), "[DONE]"]
    for send_reasoning in (False, True):
        provider = Served(list(first), list(last))
        run(workspace, provider, settings=AgentSettings(model="m", send_reasoning=send_reasoning))
        message = provider.requests[1]["messages"][2]
        assert message["tool_calls"][0]["extra_content"] == {"sig": "s1"}
        assert ("reasoning_content" in message) is send_reasoning
