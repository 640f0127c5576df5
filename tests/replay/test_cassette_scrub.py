"""Recorded streams hold no secret and no user path (lab.replay.scrub through redact_cassette).

Inputs are written from the wire shapes: chat-completions SSE chunks (``choices[0].delta.content``,
``delta.tool_calls[0].function.arguments``), Responses API ``response.output_text.delta`` events,
and OpenAI's 401 body ("Incorrect API key provided: sk-proj-****…abcd").
"""

from __future__ import annotations

import json
import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.export.secrets import SecretScanner
from lab.gateway.scripted import responses_exchange
from lab.providers.base import Completion, ToolCall
from lab.providers.encode import completion_to_exchange
from lab.providers.wire import parse_exchange
from lab.replay.cassette import dump_cassette
from lab.replay.scrub import redact_cassette

HEADER: dict[str, Any] = {"schemaVersion": 1, "format": "cassette/v1", "type": "header", "suiteId": "s",
                          "taskId": "t"}
SK_PROJ = "sk-proj-" + "Zq4vR8mT2xK6nB1cW9eY3uH7jL5pA0sDfG8hJ2kQ"
GITHUB = "ghp_" + "R8mT2xK6nB1cW9eY3uH7jL5pA0sDfG8hJ2kQ"
GOOGLE = "AIza" + "SyR8mT2xK6nB1cW9eY3uH7jL5pA0sDfG8hJ"  # 35 after AIza
AWS = "AKIA" + "R8MT2XK6NB1CW9EY"
MASKED = "sk-proj-" + "*" * 32 + "a9Qz"
ENV_KEY = "zz-custom-credential-7f3a9c1e"
SECRETS = [SK_PROJ, GITHUB, GOOGLE, AWS, MASKED, ENV_KEY]
ENV = {"MY_SERVICE_KEY": ENV_KEY, "HOME": "/home/alice"}


def call(exchange: dict[str, Any], index: int = 0, request: Any = None) -> dict[str, Any]:
    return {"schemaVersion": 1, "type": "call", "index": index, "purpose": "main", "fingerprint": "0" * 64,
            "request": request or {"model": "m", "messages": []}, "exchange": exchange}


def written(calls: list[dict[str, Any]], env: dict[str, str] = ENV) -> tuple[str, list[dict[str, Any]], list[Any]]:
    header, out, replaced = redact_cassette(dict(HEADER), calls, env=env)
    return dump_cassette(header, out).decode(), out, replaced


def delta_strings(exchange: dict[str, Any]) -> list[str]:
    """Every string under a ``delta`` key of every event, in stream order."""
    found: list[str] = []

    def walk(value: Any, inside: bool) -> None:
        if isinstance(value, str) and inside:
            found.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, inside or key == "delta")
        elif isinstance(value, list):
            for item in value:
                walk(item, inside)

    for data in exchange["events"]:
        if data != "[DONE]":
            walk(json.loads(data), False)
    return found


def assert_no_join_holds(secret: str, exchange: dict[str, Any]) -> None:
    pieces = delta_strings(exchange)
    joined = "".join(pieces)
    assert secret not in joined
    # Any run of consecutive fragments, not only the whole join.
    for start in range(len(pieces)):
        assert secret not in "".join(pieces[start:])
    assert SecretScanner(env=ENV).findings(joined) == []


def chat_stream(text: str, pieces: int, arguments: str | None = None) -> dict[str, Any]:
    calls = (ToolCall("call_0", "write_file", arguments),) if arguments is not None else ()
    completion = Completion(text, calls, "tool_calls" if calls else "stop")
    return completion_to_exchange(completion, stream=True, response_id="chatcmpl-0", model="m", piece_chars=pieces)


def test_a_key_split_across_chat_deltas_is_masked_in_the_assembled_text() -> None:
    exchange = chat_stream(f"Found it: {SK_PROJ} in .env", pieces=7)
    assert not any(SK_PROJ in data for data in exchange["events"])  # no one event holds it whole
    text, calls, replaced = written([call(exchange)])
    assert SK_PROJ not in text and SK_PROJ[:20] not in "".join(delta_strings(calls[0]["exchange"]))
    assert_no_join_holds(SK_PROJ, calls[0]["exchange"])
    assert parse_exchange(calls[0]["exchange"]).content == "Found it: <secret:api-key> in .env"
    assert len(calls[0]["exchange"]["events"]) == len(exchange["events"])  # the stream keeps its shape
    assert {"field": "calls[0].exchange.events", "kind": "sk- API key (OpenAI/Anthropic style)"} in replaced


def test_a_key_split_across_tool_call_argument_deltas_is_masked() -> None:
    arguments = json.dumps({"path": ".env", "content": f"GITHUB_TOKEN={GITHUB}\n"})
    exchange = chat_stream("", pieces=5, arguments=arguments)
    _, calls, _ = written([call(exchange)])
    parsed = parse_exchange(calls[0]["exchange"])
    assert json.loads(parsed.tool_calls[0].arguments) == {"path": ".env",
                                                          "content": "GITHUB_TOKEN=<secret:github-token>\n"}
    assert_no_join_holds(GITHUB, calls[0]["exchange"])


def test_a_key_split_across_responses_text_deltas_is_masked() -> None:
    completion = Completion(f"key {GOOGLE} here", (), "stop")
    exchange = dict(responses_exchange(completion, 0, "m", stream=True))
    for n, data in enumerate(exchange["events"]):  # finer deltas than the scripted translation sends
        event = json.loads(data)
        if event.get("type") == "response.output_text.delta":
            text = event["delta"]
            pieces = [text[i:i + 6] for i in range(0, len(text), 6)]
            events = [json.dumps({**event, "delta": p}) for p in pieces]
            exchange["events"][n:n + 1] = events
            exchange["eventNames"][n:n + 1] = [exchange["eventNames"][n]] * len(events)
            break
    _, calls, _ = written([call(exchange)])
    assert_no_join_holds(GOOGLE, calls[0]["exchange"])
    assert GOOGLE not in json.dumps(calls[0])  # response.completed's whole text too


def test_a_masked_key_in_a_401_body_is_replaced() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {MASKED}. You can find your API key at "
                                 "https://platform.openai.com/account/api-keys.",
                      "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    text, calls, replaced = written([call({"type": "json", "status": 401, "body": body})])
    assert MASKED not in text and "a9Qz" not in text
    assert calls[0]["exchange"]["body"]["error"]["message"].startswith(
        "Incorrect API key provided: <secret:masked-api-key>.")
    assert replaced == [{"field": "calls[0].exchange.body.error.message", "kind": "Masked API Key"}]


def test_home_and_pytest_paths_in_requests_and_answers_are_scrubbed() -> None:
    request = {"model": "m", "messages": [
        {"role": "tool", "content": f"ls /home/alice/src/app.py {tempfile.gettempdir()}/pytest-of-alice/pytest-3/test_a0/x.py"},
        {"role": "tool", "content": '{"file":"\\/home\\/alice\\/notes.txt"}'}]}
    exchange = chat_stream("Read /home/alice/notes.txt", pieces=4)
    text, calls, _ = written([call(exchange, request=request)])
    assert "alice" not in text
    assert calls[0]["request"]["messages"][0]["content"] == \
        "ls <home>/src/app.py <tmp>/pytest-of-<user>/pytest-3/test_a0/x.py"
    assert calls[0]["request"]["messages"][1]["content"] == '{"file":"<home>\\/notes.txt"}'
    assert parse_exchange(calls[0]["exchange"]).content == "Read <home>/notes.txt"


# -- properties ---------------------------------------------------------------------------------

prose = st.text(alphabet=st.sampled_from("abc XYZ.,:\n=()"), max_size=30)


@settings(max_examples=60, deadline=None)
@given(secret=st.sampled_from(SECRETS), before=prose, after=prose,
       cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12), channel=st.sampled_from(["text", "args"]))
def test_no_join_of_a_streams_deltas_yields_a_secret(secret: str, before: str, after: str, cuts: list[int],
                                                     channel: str) -> None:
    whole = f"{before} {secret} {after}"
    bounds = sorted({0, len(whole), *(c % (len(whole) + 1) for c in cuts)})
    pieces = [whole[a:b] for a, b in zip(bounds, bounds[1:])]
    if channel == "text":
        deltas = [{"content": p} for p in pieces]
    else:
        deltas = [{"tool_calls": [{"index": 0, **({"id": "call_0", "type": "function"} if i == 0 else {}),
                                   "function": {"name": "w", "arguments": p} if i == 0 else {"arguments": p}}]}
                  for i, p in enumerate(pieces)]
    events = [json.dumps({"id": "c", "choices": [{"index": 0, "delta": d}]}) for d in deltas] + ["[DONE]"]
    _, calls, _ = written([call({"type": "sse", "status": 200, "events": events})])
    out = calls[0]["exchange"]
    assert_no_join_holds(secret, out)
    assert len(out["events"]) == len(events)
    joined = "".join(delta_strings(out)).replace("call_0", "").replace("function", "").replace("w", "", 1) \
        if channel == "args" else "".join(delta_strings(out))
    assert before.strip() in joined and after.strip() in joined  # the text around it is kept


masked_keys = st.builds(lambda prefix, stars, suffix: prefix + "*" * stars + suffix,
                        st.sampled_from(["", "s", "sk-", "sk-proj-", "sk-ant-api03-", "gsk_", "sk-or-v1-", "xai-"]),
                        st.integers(min_value=4, max_value=80),
                        st.text(alphabet="abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789",
                                min_size=2, max_size=8))


@settings(max_examples=60, deadline=None)
@given(key=masked_keys, lead=st.sampled_from(["Incorrect API key provided: ", "Your api key: ", "invalid x-api-key ",
                                              "key=", "'", '"']),
       tail=st.sampled_from([". You can find your API key at https://platform.openai.com.", " is invalid", "", "'",
                             '"', " (401)"]))
def test_a_masked_key_is_replaced_whatever_its_prefix_length_and_suffix(key: str, lead: str, tail: str) -> None:
    text, _ = SecretScanner(env={}).redact_text(f"{lead}{key}{tail}")
    assert text == f"{lead}<secret:masked-api-key>{tail}"


def test_the_last_guard_refuses_a_key_split_across_deltas_that_was_not_redacted() -> None:
    import pytest

    from lab.errors import CassetteError
    from lab.replay.scrub import check_secrets

    exchange = chat_stream(f"key {SK_PROJ}", pieces=9)
    with pytest.raises(CassetteError, match=r"calls\[0\]\.exchange\.events \(sk- API key"):
        check_secrets(dict(HEADER), [call(exchange)], source="t.jsonl", env={})
    _, calls, _ = written([call(exchange)])
    check_secrets(dict(HEADER), calls, source="t.jsonl", env={})  # redacted: nothing left to refuse
