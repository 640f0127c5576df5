"""A failed run of the built-in agent replays exactly as it happened (cause, message, events), and the text
an answer carried before a mid-stream error is kept in live and record runs as in replay."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.build.graph import prepare
from lab.execute.run import execute_run
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.schemas import assert_jsonl_valid, assert_valid

TASK = "rename-symbol"
KEY = "sk-test-replay-exactly-0123456789"
BAD_REQUEST = {"error": {"message": "Invalid 'messages[1].content': string too long", "type": "invalid_request_error",
                         "param": "messages", "code": "string_above_max_length"}}


@pytest.fixture
def server() -> Iterator[LocalHTTPServer]:
    with LocalHTTPServer() as found:
        yield found
        assert not found.errors


def run(tmp_path: Path, server: LocalHTTPServer, mode: str, *more: str) -> dict[str, Any]:
    prep = prepare(["suite=smoke-coding", "provider=openai", f"provider.base_url={server.url}/v1",
                    "provider.api_key_env=LAB_TEST_KEY", "provider.max_retries=1", f"tasks=[{TASK}]",
                    f"mode={mode}", f"cassette_dir={tmp_path / 'cassettes'}", "preflight=false", *more])
    prep.ctx.env = {**os.environ, "LAB_TEST_KEY": KEY}
    record = execute_run(prep.ctx, prep.specs[0])
    assert_valid("run-record", record)
    return record


def what_replays(record: dict[str, Any]) -> tuple[Any, ...]:
    events = [{k: v for k, v in e.items() if k != "latencyMs"} for e in record["events"]]
    return record["status"], record["error"], events


def sequence(*answers: Callable[[Response], None]) -> Callable[[Request, Response], None]:
    queue = list(answers)
    return lambda request, response: queue.pop(0)(response) if len(queue) > 1 else queue[0](response)


def test_a_retried_then_refused_call_replays_with_its_cause_message_and_events(
        tmp_path: Path, server: LocalHTTPServer) -> None:
    server.handler = sequence(
        lambda r: r.send_json(503, {"error": {"message": "overloaded"}}, headers={"retry-after-ms": "0"}),
        lambda r: r.send_json(200, BAD_REQUEST))  # an in-band refusal after HTTP 200: bad_request
    recorded = run(tmp_path, server, "record", "provider.stream=false")
    assert (recorded["status"], recorded["error"]["cause"]) == ("error", "bad_request")
    assert [e["type"] for e in recorded["events"]] == ["retry"]
    cassette = next((tmp_path / "cassettes").rglob(f"{TASK}.jsonl"))
    assert_jsonl_valid("cassette", cassette)
    calls = server.requests[:]

    replayed = run(tmp_path, server, "replay", "provider.stream=false")

    assert len(server.requests) == len(calls)  # no provider traffic
    assert what_replays(replayed) == what_replays(recorded)
    assert "string too long" in replayed["error"]["message"]


def mid_stream_error(response: Response) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "I will rename the"}, "finish_reason": None}]}
    response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
    response.write(f"data: {json.dumps(chunk)}\n\n".encode())
    response.write(b'data: {"error": {"message": "upstream model overloaded", "type": "server_error"}}\n\n')
    response.end()


@pytest.mark.parametrize("mode", ["live", "record"], ids=["eval", "record"])
def test_the_text_before_a_mid_stream_error_is_kept(tmp_path: Path, server: LocalHTTPServer, mode: str) -> None:
    server.handler = lambda request, response: mid_stream_error(response)

    first = run(tmp_path, server, mode, "provider.stream=true", "provider.max_retries=0")

    assert (first["status"], first["error"]["cause"]) == ("error", "server")
    assert first["error"]["partial"] == {"content": "I will rename the", "toolCalls": []}
    [call] = [e for e in first["events"] if e["type"] == "model_call"]
    assert call["partial"]["content"] == "I will rename the"
    if mode == "record":
        replayed = run(tmp_path, server, "replay", "provider.stream=true", "provider.max_retries=0")
        assert what_replays(replayed) == what_replays(first)
