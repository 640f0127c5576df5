"""Replay compares requests as JSON values and names the field; cassettes keep every line break;
credentials are redacted when recording, and a failing exchange is recorded (lab.replay)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import CassetteMiss, ProviderError
from lab.export.secrets import SecretScanner
from lab.providers.openai_compat import OpenAICompatProvider
from lab.replay.cassette import (
    Normaliser,
    Recorder,
    Replayer,
    divergence,
    dump_cassette,
    read_cassette,
    write_cassette,
)
from lab.replay.fingerprint import canonical_numbers, fingerprint, json_equal
from lab.replay.scrub import redact_cassette
from tests.helpers.http_server import LocalHTTPServer, Request, Response

REQUEST = {"model": "m", "temperature": 1, "max_tokens": 10,
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]}
HEADER = {"schemaVersion": 1, "format": "cassette/v1", "type": "header", "suiteId": "s", "taskId": "t",
          "harnessVersion": "0", "configHash": "0" * 64, "model": "m",
          "policy": {"mode": "auto", "allow": [], "readOnly": False}}
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def recorded_call(request: dict[str, Any], exchange: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"schemaVersion": 1, "type": "call", "index": 0, "purpose": "main", "fingerprint": fingerprint(request),
            "request": request, "exchange": exchange or {"type": "json", "status": 200, "body": {"choices": []}}}


def replayer(request: dict[str, Any]) -> Replayer:
    return Replayer(header=HEADER, calls=[recorded_call(request)], normalise=Normaliser(), source="c.jsonl")


def test_an_integral_float_replays_the_integer() -> None:
    replayer({**REQUEST, "temperature": 1}).send({**REQUEST, "temperature": 1.0})  # no CassetteMiss


def test_true_is_not_one() -> None:
    with pytest.raises(CassetteMiss, match=r"request differs at temperature: recorded '1', actual 'true'") as caught:
        replayer({**REQUEST, "temperature": 1}).send({**REQUEST, "temperature": True})
    assert caught.value.field == "temperature"


def test_a_changed_message_names_its_path_and_both_values() -> None:
    actual = json.loads(json.dumps(REQUEST))
    actual["messages"][1]["content"] = "stop"
    with pytest.raises(CassetteMiss, match=r"at messages\[1\].content: recorded 'go', actual 'stop'"):
        replayer(REQUEST).send(actual)


@pytest.mark.parametrize(("a", "b", "equal"), [
    (1, 1.0, True), (0, -0.0, True), (True, 1, False), (False, 0, False), (1.5, 1.5, True),
    ([1, {"x": 2.0}], [1.0, {"x": 2}], True), ({"a": 1}, {"a": 1, "b": None}, False), ("1", 1, False),
])
def test_json_equality(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert (fingerprint({"v": a}) == fingerprint({"v": b})) is equal


_SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False) | st.text(max_size=4)
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(["a", "b", "content", "role"]), inner, max_size=3), max_leaves=12)
_REQUESTS = st.dictionaries(st.sampled_from(["model", "messages", "tools", "temperature", "max_tokens"]), _JSON,
                            max_size=5)


@given(_REQUESTS, _REQUESTS)
def test_divergence_paths_are_never_empty(recorded: dict[str, Any], actual: dict[str, Any]) -> None:
    if json_equal(recorded, actual):
        assert fingerprint(recorded) == fingerprint(actual)
        return
    path, _, _ = divergence(recorded, actual)
    assert path, (recorded, actual)


@given(_JSON)
def test_canonical_numbers_keep_json_equality(value: Any) -> None:
    assert json_equal(canonical_numbers(value), value)


@settings(deadline=None)  # writes and reads a file per example
@given(st.text(alphabet=st.sampled_from(list(LINE_BREAKS) + ["a", "é", " "]), max_size=30))
def test_cassettes_keep_every_line_break(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("c") / "t.jsonl"
    request = {**REQUEST, "messages": [{"role": "tool", "tool_call_id": "c", "content": text}]}
    write_cassette(path, dump_cassette(HEADER, [recorded_call(request)]))
    header, calls = read_cassette(path)
    assert calls[0]["request"]["messages"][0]["content"] == text


def test_credentials_are_redacted_not_refused() -> None:
    key = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
    call = recorded_call({**REQUEST, "messages": [{"role": "tool", "tool_call_id": "c", "content": f"k={key}"}]})
    call["requestHeaders"] = {"api-key": "azure-secret-value", "X-Title": "lab"}
    header, calls, replaced = redact_cassette(HEADER, [call], env={})
    assert calls[0]["request"]["messages"][0]["content"] == "k=<secret:github-token>"
    assert (calls[0]["requestHeaders"], calls[0]["droppedHeaders"]) == ({"X-Title": "lab"}, ["api-key"])
    assert replaced == [{"field": "calls[0].request.messages[0].content", "kind": "GitHub Token"}]
    assert "azure-secret-value" not in dump_cassette(header, calls).decode()


def test_replay_redacts_the_live_request_the_same_way() -> None:
    key = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
    scanner = SecretScanner(env={})
    normalise = Normaliser(redact=lambda r: scanner.redact(r)[0])
    live = {**REQUEST, "messages": [{"role": "tool", "tool_call_id": "c", "content": f"key {key}"}]}
    stored = normalise(live)
    assert stored["messages"][0]["content"] == "key <secret:google-api-key>"
    Replayer(header=HEADER, calls=[recorded_call(stored)], normalise=normalise).send(live)


def test_a_failing_answer_is_recorded_and_replays_the_same_failure(tmp_path: Path) -> None:
    def handler(request: Request, response: Response) -> None:
        response.send_json(200, {"error": {"message": "upstream timed out", "code": 504}})

    with LocalHTTPServer() as server:
        server.handler = handler
        provider = OpenAICompatProvider(base_url=server.url + "/v1", api_key_env="K", stream=False, timeout_s=5,
                                        max_retries=0, env={"K": "test-key-value-123"})
        recorder = Recorder(inner=provider, normalise=Normaliser())
        with pytest.raises(ProviderError, match="upstream timed out") as live:
            recorder.send(dict(REQUEST))
    assert recorder.calls[0]["failed"] is True

    with pytest.raises(ProviderError) as again:  # the failure as it was raised: class, cause, message, status
        Replayer(header=HEADER, calls=recorder.calls, normalise=Normaliser()).send(dict(REQUEST))
    assert type(again.value) is type(live.value)
    assert (again.value.cause, str(again.value), again.value.status, again.value.server) == (
        live.value.cause, str(live.value), live.value.status, live.value.server)
    assert again.value.exchange == recorder.calls[0]["exchange"]
