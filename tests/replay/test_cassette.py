"""Cassettes: normalisation, divergence paths, reading errors, safe writing."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.errors import CassetteError, CassetteMiss
from lab.providers.openai_compat import OpenAICompatProvider
from lab.replay.cassette import (
    MAX_CASSETTE_BYTES,
    Normaliser,
    Recorder,
    Replayer,
    dump_cassette,
    fingerprint,
    first_difference,
    read_cassette,
    write_cassette,
)
from lab.replay.scrub import check_secrets
from tests.helpers.http_server import LocalHTTPServer, Request, Response

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read.", "parameters": {}}},
         {"type": "function", "function": {"name": "edit_file", "description": "Edit.", "parameters": {}}}]
REQUEST = {"model": "m", "max_tokens": 10, "tools": TOOLS,
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "do the thing"}]}
HEADER = {"schemaVersion": 1, "format": "cassette/v1", "type": "header", "suiteId": "s", "taskId": "t",
          "harnessVersion": "0", "configHash": "0" * 64, "model": "m",
          "policy": {"mode": "auto", "allow": [], "readOnly": False}}


def call(request: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"schemaVersion": 1, "type": "call", "index": index, "purpose": "main",
            "fingerprint": fingerprint(request), "request": request,
            "exchange": {"type": "json", "status": 200, "body": {"choices": []}}}


def edited(**changes: Any) -> dict[str, Any]:
    request = json.loads(json.dumps(REQUEST))
    for path, value in changes.items():
        target = request
        *parents, last = path.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    return request


def test_tool_fields_are_keyed_by_tool_name() -> None:
    actual = edited(tools__1__function__description="Edit carefully.")
    path, recorded, got = first_difference(REQUEST, actual)
    assert path == "tools[edit_file].description"
    assert (recorded, got) == ("Edit.", "Edit carefully.")


def test_message_fields_are_keyed_by_index_with_excerpts() -> None:
    path, recorded, got = first_difference(REQUEST, edited(messages__1__content="do the other thing"))
    assert path == "messages[1].content"
    assert recorded == "do the thing" and got == "do the other thing"


def test_missing_and_extra_items_are_named() -> None:
    longer = edited()
    longer["messages"].append({"role": "user", "content": "more"})
    assert first_difference(REQUEST, longer)[0] == "messages[2]"
    assert first_difference(longer, REQUEST)[0] == "messages[2]"
    assert first_difference(REQUEST, {**REQUEST, "temperature": 0})[0] == "temperature"


def test_replayer_serves_in_order_and_diverges_loudly() -> None:
    replayer = Replayer(header=HEADER, calls=[call(REQUEST)], normalise=Normaliser(), source="c.jsonl")
    assert replayer.send(REQUEST) == {"type": "json", "status": 200, "body": {"choices": []}}
    with pytest.raises(CassetteMiss, match=r"c.jsonl: call 1: the harness made a call the recording does not have"):
        replayer.send(REQUEST)
    fresh = Replayer(header=HEADER, calls=[call(REQUEST)], normalise=Normaliser(), source="c.jsonl")
    with pytest.raises(CassetteMiss) as info:
        fresh.send(edited(messages__1__content="x"))
    assert info.value.field == "messages[1].content" and info.value.call_index == 0
    assert fresh.unused == 1


def test_normaliser_rewrites_workspace_paths_and_tool_output_only(tmp_path: Path) -> None:
    normalise = Normaliser(workspace=tmp_path, rules=((r"\d+ms", "<ms>"),))
    request = {"messages": [{"role": "user", "content": f"in {tmp_path} took 5ms"},
                            {"role": "tool", "content": f"{tmp_path}/a.py took 12ms"}]}
    out = normalise(request)
    assert out["messages"][0]["content"] == "in <workspace> took 5ms"
    assert out["messages"][1]["content"] == "<workspace>/a.py took <ms>"


@pytest.mark.parametrize(("content", "message"), [
    ("", "expected a cassette/v1 header"),
    ("{not json\n", "line 1: not JSON"),
    (json.dumps({**HEADER, "schemaVersion": 9}) + "\n", "schemaVersion 9 is newer than this lab reads"),
    (json.dumps(HEADER) + "\n" + json.dumps({"type": "call"}) + "\n", "line 2: not a valid call"),
    (json.dumps(HEADER) + "\nnull\n", "line 2: not a valid call"),
    ("[1]\n", "line 1: expected a cassette/v1 header"),
    (json.dumps({k: v for k, v in HEADER.items() if k != "taskId"}) + "\n", "line 1: not a valid header"),
    (json.dumps(HEADER) + "\n" + json.dumps({**call(REQUEST), "exchange": "oops"}) + "\n",
     "line 2: not a valid call: exchange"),
])
def test_reading_a_bad_cassette_names_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(content)
    with pytest.raises(CassetteError, match=message):
        read_cassette(path)


def test_missing_cassette_says_how_to_record(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no cassette for this task; record one"):
        read_cassette(tmp_path / "none.jsonl")


def test_cassette_round_trips_byte_for_byte(tmp_path: Path) -> None:
    data = dump_cassette(HEADER, [call(REQUEST)])
    write_cassette(tmp_path / "s" / "t.jsonl", data)
    header, calls = read_cassette(tmp_path / "s" / "t.jsonl")
    assert dump_cassette(header, calls) == data
    assert data.startswith(b'{"schemaVersion":1,')


def test_oversized_cassette_is_refused_and_nothing_written(tmp_path: Path) -> None:
    big = call(edited(messages__1__content="x" * MAX_CASSETTE_BYTES))
    with pytest.raises(CassetteError, match="over the 262144-byte limit"):
        write_cassette(tmp_path / "t.jsonl", dump_cassette(HEADER, [big]))
    assert not list(tmp_path.iterdir())


def test_suite_directory_limit(tmp_path: Path) -> None:
    for i in range(9):  # 9 x 240 KB: each under the file limit, together over 2 MB
        (tmp_path / f"t{i}.jsonl").write_bytes(b"x" * 240_000)
    with pytest.raises(CassetteError, match="per suite"):
        write_cassette(tmp_path / "new.jsonl", dump_cassette(HEADER, [call(REQUEST)]))


# --- R4: secrets planted at record time (fake keys are built here, never committed) ---

def fake_openai_key() -> str:
    rng = random.Random(7)
    return "sk-" + "proj-" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(48)) + "A1b"


def fake_aws_key() -> str:
    rng = random.Random(11)
    return "AKIA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))


@pytest.fixture
def server() -> Iterator[LocalHTTPServer]:
    with LocalHTTPServer() as srv:
        yield srv


def answer(chunk_text: str) -> Any:
    def handler(request: Request, response: Response) -> None:
        response.send_json(200, {"id": "r", "object": "chat.completion", "created": 0, "model": "m",
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": chunk_text}}]})
    return handler


@pytest.mark.parametrize("place", ["request header", "request body", "response"])
@pytest.mark.parametrize("make_key", [fake_openai_key, fake_aws_key], ids=["sk-key", "aws-key"])
def test_recording_with_a_secret_is_refused_naming_the_field(server: LocalHTTPServer, capsys: pytest.CaptureFixture[str],
                                                             place: str, make_key: Any) -> None:
    key = make_key()
    server.handler = answer(f"here: {key}" if place == "response" else "DONE: ok")
    provider = OpenAICompatProvider(base_url=server.url + "/v1", api_key_env="LAB_TEST_KEY", stream=False,
                                    timeout_s=5, max_retries=0, env={"LAB_TEST_KEY": "test-key-value-123"},
                                    headers={"X-Gateway-Token": key} if place == "request header" else None)
    recorder = Recorder(inner=provider, normalise=Normaliser())
    request = edited(messages__1__content=f"use {key}") if place == "request body" else edited()
    recorder.send(request)
    with pytest.raises(CassetteError) as info:
        check_secrets(HEADER, recorder.calls, source="t.jsonl", env={})
    message = str(info.value)
    expected = {"request header": "calls[0].requestHeaders.X-Gateway-Token",
                "request body": "calls[0].request.messages[1].content",
                "response": "calls[0].exchange.body.choices[0].message.content"}[place]
    assert expected in message
    assert key not in message and key not in capsys.readouterr().out


def test_the_exact_credential_in_the_environment_is_refused() -> None:
    secret = "plainvalue-not-key-shaped"
    calls = [call(edited(messages__1__content=f"token {secret}"))]
    with pytest.raises(CassetteError, match=r"calls\[0\].request.messages\[1\].content \(credential from \$MY_API_KEY\)") as info:
        check_secrets(HEADER, calls, source="t.jsonl", env={"MY_API_KEY": secret})
    assert secret not in str(info.value)


def test_hashes_and_ids_are_not_secrets() -> None:
    calls = [call(edited(messages__1__content="sha256: " + "ab12" * 16 + " id 123e4567-e89b-12d3-a456-426614174000"))]
    check_secrets(HEADER, calls, source="t.jsonl", env={})
