"""Key detection by kind: every planted shape is redacted wherever and however it is written
(lab.export.key_shapes through lab.export.secrets and lab.replay.scrub), and ordinary code is left alone.

The planted shapes are tests/helpers/key_corpus.py: provider prefixes (Hugging Face ``hf_``, Groq
``gsk_``, xAI ``xai-`` …), credentials-file forms (``aws_secret_access_key = …`` quoted or not),
prefix-less keys in assignments (Azure, Mistral, Cohere), PEM blocks and their body lines alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.errors import CassetteError
from lab.export.secrets import SecretScanner
from lab.providers.base import Completion, ToolCall
from lab.providers.encode import completion_to_exchange
from lab.replay.scrub import check_secrets, redact_cassette, stream_texts
from tests.helpers.key_corpus import corpus, secrets_of

CORPUS = corpus()
NAMES = sorted(CORPUS)
HEADER: dict[str, Any] = {"schemaVersion": 1, "format": "cassette/v1", "type": "header", "suiteId": "s",
                          "taskId": "t"}


def placements(text: str) -> dict[str, str]:
    """``text`` as the lab meets it: as is, in a JSON document, and as tool-call arguments inside a
    stream event (two levels of JSON string escaping)."""
    arguments = json.dumps({"path": "notes.txt", "content": text})
    return {"raw": text, "json": json.dumps({"output": text}),
            "tool-call-event": json.dumps({"choices": [{"delta": {"tool_calls": [{"function": {
                "arguments": arguments}}]}}]})}


def leaked(secrets: list[str], written: str) -> list[str]:
    """The secrets ``written`` still holds, in any spelling up to two levels of JSON escaping."""
    spellings = {s: [s, json.dumps(s)[1:-1], json.dumps(json.dumps(s)[1:-1])[1:-1]] for s in secrets}
    return [s[:12] + "…" for s, forms in spellings.items() if any(form in written for form in forms)]


@pytest.mark.parametrize("name", NAMES)
def test_every_planted_shape_is_redacted_in_every_placement(name: str) -> None:
    text, secrets = CORPUS[name]
    scanner = SecretScanner(env={})
    for where, placed in placements(text).items():
        redacted, kinds = scanner.redact_text(placed)
        assert kinds, (name, where)
        assert leaked(secrets, redacted) == [], (name, where)
        assert scanner.findings(redacted) == [], (name, where)  # what is written passes the last guard


@pytest.mark.parametrize(("name", "kind", "mark"), [
    ("huggingface", "Hugging Face Token", "hugging-face-token"), ("groq", "Groq API Key", "groq-api-key"),
    ("xai", "xAI API Key", "xai-api-key"), ("replicate", "Replicate API Token", "replicate-api-token"),
    ("aws-credentials-file", "AWS Secret Access Key", "aws-secret-access-key"),
    # detect-secrets' AWS plugin also finds a quoted secret, under its own kind (first in order).
    ("aws-quoted", "AWS Secret Access Key", "aws-access-key"),
    ("pem-body-lines", "Private Key", "private-key"), ("mistral", "Credential Assignment", "credential-assignment")])
def test_the_marker_names_the_kind(name: str, kind: str, mark: str) -> None:
    redacted, kinds = SecretScanner(env={}).redact_text(CORPUS[name][0])
    assert kind in kinds
    assert f"<secret:{mark}>" in redacted


def test_each_private_key_body_line_alone_is_redacted() -> None:
    """A key streamed or searched line by line: no line carries the BEGIN header."""
    scanner = SecretScanner(env={})
    for line in CORPUS["pem-block"][1]:
        for text in (line, f"id_rsa:7: {line}", json.dumps({"content": line + "\n"}), f"  {line}\n"):
            redacted, kinds = scanner.redact_text(text)
            assert line not in redacted and kinds == ["Private Key"], text


# -- cassettes: the two shapes that reached them, and the whole corpus joined or not ------------------

def chat_call(text: str, *, arguments: str | None = None, request: Any = None, pieces: int = 7) -> dict[str, Any]:
    calls = (ToolCall("call_0", "write_file", arguments),) if arguments is not None else ()
    completion = Completion(text, calls, "tool_calls" if calls else "stop")
    exchange = completion_to_exchange(completion, stream=True, response_id="chatcmpl-0", model="m", piece_chars=pieces)
    return {"schemaVersion": 1, "type": "call", "index": 0, "purpose": "main", "fingerprint": "0" * 64,
            "request": request or {"model": "m", "messages": []}, "exchange": exchange}


def cassette_text(call: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    header, calls, _ = redact_cassette(dict(HEADER), [call], env={})
    check_secrets(header, calls, source="t.jsonl", env={})  # the last guard finds nothing left
    joined = "".join(stream_texts(calls[0]["exchange"]))
    return json.dumps([header, *calls]) + joined, calls


def test_a_quoted_aws_secret_in_json_encoded_tool_call_arguments_is_redacted() -> None:
    text, secrets = CORPUS["aws-quoted"]
    arguments = json.dumps({"path": "creds", "content": f"[default]\n{text}\n"})
    written, _ = cassette_text(chat_call("", arguments=arguments, pieces=5))
    assert leaked(secrets, written) == []


def test_a_private_key_body_line_returned_by_the_search_tool_is_redacted() -> None:
    text, secrets = CORPUS["pem-body-lines"]
    request = {"model": "m", "messages": [
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "search", "arguments": '{"pattern": "A"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": text}]}
    written, calls = cassette_text(chat_call("ok", request=request))
    assert leaked(secrets, written) == []
    assert calls[0]["request"]["messages"][1]["content"].startswith("keys/id_rsa:2: <secret:private-key>")


def test_the_last_guard_refuses_an_unredacted_body_line() -> None:
    call = chat_call("ok", request={"model": "m", "messages": [{"role": "tool", "content": CORPUS["pem-body-lines"][0]}]})
    with pytest.raises(CassetteError, match=r"calls\[0\]\.request\.messages\[0\]\.content \(Private Key\)"):
        check_secrets(dict(HEADER), [call], source="t.jsonl", env={})


def test_the_whole_corpus_split_across_deltas_is_redacted_joined_or_not() -> None:
    everything = "\n".join(text for text, _ in CORPUS.values())
    arguments = json.dumps({"path": "all.txt", "content": everything})
    written, calls = cassette_text(chat_call(everything, arguments=arguments, pieces=97))
    assert leaked(secrets_of(CORPUS), written) == []
    for data in calls[0]["exchange"]["events"]:  # each event alone as well
        assert leaked(secrets_of(CORPUS), data) == []


# -- the kind, as a property ------------------------------------------------------------------------

BOUNDARY = st.sampled_from([" ", "\n", "\t", '"', "'", ",", ";", "{", "}", "[", "]", "\\n"])
SURROUNDINGS = st.text(alphabet=st.sampled_from(list("ab XY:=,;'\"\\/\n\t{}[]")), max_size=8)


def embed(draw: st.DrawFn, text: str) -> Any:
    """``text`` inside a random JSON context: prose around it, 0–2 levels of JSON string encoding,
    nested in objects and lists."""
    value: Any = draw(SURROUNDINGS) + text + draw(SURROUNDINGS)
    for _ in range(draw(st.integers(0, 2))):
        value = json.dumps(draw(st.sampled_from([{"content": value}, [value], value])))
    for _ in range(draw(st.integers(0, 2))):
        value = draw(st.sampled_from([{"arguments": value}, [1, value], {"k": {"v": value}}]))
    return value


@st.composite
def planted(draw: st.DrawFn) -> tuple[Any, list[str]]:
    name = draw(st.sampled_from(NAMES))
    text, secrets = CORPUS[name]
    # A key is a token: what surrounds it starts with a delimiter (a letter glued on makes another
    # token, and a PEM body line glued to a letter is no longer that line).
    text = draw(BOUNDARY) + text + draw(BOUNDARY)
    return embed(draw, text), secrets


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planted())
def test_a_key_of_any_shape_in_any_json_context_is_always_redacted(case: tuple[Any, list[str]]) -> None:
    document, secrets = case
    scanner = SecretScanner(env={})
    redacted, hits = scanner.redact(document)
    assert hits
    assert leaked(secrets, json.dumps(redacted, ensure_ascii=False)) == []


# -- ordinary text is left alone --------------------------------------------------------------------

ORDINARY = [
    'integrity "sha512-' + "Qm9vdGhpbmdUb1NlZUhlcmU" * 3 + 'XYZab1cd=="',
    'integrity="sha384-' + "oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC" + '"',
    'checksum = "' + "3f2b9c1d" * 8 + '"',
    'hash = "sha256:' + "9a8b7c6d" * 8 + '"',
    "commit " + "3f2b1c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b",
    '"id": "123e4567-e89b-12d3-a456-426614174000"',
    '"sha256": "' + "0123456789abcdef" * 4 + '"',
    'GITHUB_TOKEN = os.environ["GITHUB_TOKEN"]',
    "api_key = get_secret('openai')",
    'token: ${{ secrets.GITHUB_TOKEN }}',
    '"max_tokens": 4096, "inputTokens": 1234567890123456, "api_key_env": "OPENAI_API_KEY"',
    "token_count = 12345678901234567890",
    "password_file = /run/secrets/db_password_2024_primary",
    "hf_hub_download(repo_id='gpt2', filename='config.json')",
    "fw_version_string_for_the_device = 1",
    "from sklearn.model_selection import train_test_split",
    "    key-value store; see docs/secret-handling-and-tokenization.md",
    "session_id=4f1d2c3b-aaaa-bbbb-cccc-0123456789ab",
    "tokenizer: o200k_base",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_is_not_redacted(text: str) -> None:
    assert SecretScanner(env={}).redact_text(text) == (text, [])
