"""End to end against a loopback stub serving every wire kind: record, then replay.

The stub speaks OpenAI chat completions over SSE and answers each task of a
small suite with one kind of real-world behaviour: keep-alive frames, usage in
unusual places (Anthropic semantics, cache writes, provider cost), continuation
fields that must come back, text with every line-break character, a lone
surrogate, an ``error:`` line after HTTP 200, and fake credentials in a tool
output, a verifier's stderr, a provider response and a gateway header.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lab.files import split_lines
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.lab_process import command_env, run_script
from tests.helpers.schemas import assert_jsonl_valid, assert_valid

pytestmark = pytest.mark.slow

# Fake keys of the shapes the scanner knows (assembled so this file holds no key itself).
KEYS = {
    "github": "github_pat_" + "11ABCDEFG0" + "123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV0123456",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    "aws": "AKIA" + "IOSFODNN7EXAMPL3",
    "bearer": "9f8e7d6c5b4a3928" + "1706abcdefXYZ123",
}
API_KEY = "wire-stub-key-" + "0123456789"
LINE_BREAKS = "one\u2028two\u2029three\x85four\x0bfive\x0csix\x1cseven\rnine\n"


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    return json.dumps({"id": "c", "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


def call(name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "id": f"call_{name}", "type": "function", **extra,
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def answer(task: str, turn: int, body: dict[str, Any]) -> list[str]:
    """SSE lines for one turn of one task (each already prefixed, without the blank line)."""
    usage = {"prompt_tokens": 8, "completion_tokens": 20, "cache_read_input_tokens": 100,
             "cache_creation_input_tokens": 30, "cost": 0.0025}
    if task == "keepalive":
        if turn == 0:
            first = chunk(call("write_file", {"path": "notes.txt", "content": LINE_BREAKS},
                               extra_content={"google": {"thought_signature": "sig-1"}}))
            return [f"data: {first}", "data: : keepalive", "data: ping",
                    f"data: {chunk({}, 'tool_calls')}",
                    "data: " + json.dumps({"choices": [], "x_groq": {"usage": usage}}), "data: [DONE]"]
        sent_back = body["messages"][2]["tool_calls"][0]
        assert sent_back["extra_content"] == {"google": {"thought_signature": "sig-1"}}, sent_back
        return [f"data: {chunk({'content': 'DONE: wrote notes.txt'})}", ": a comment",
                f"data: {chunk({}, 'stop')}", "data: " + json.dumps({"choices": [], "usage": usage}),
                "data: [DONE]"]
    if task == "surrogate":
        if turn == 0:
            raw = '{"path": "s.txt", "content": "a\\udc00b"}'
            return ["data: " + json.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {
                "tool_calls": [{"index": 0, "id": "call_w", "type": "function",
                                "function": {"name": "write_file", "arguments": raw}}]}}]}), "data: [DONE]"]
        return ['data: {"choices": [{"index": 0, "delta": {"content": "DONE: \\udc00 written"}, '
                '"finish_reason": "stop"}]}', "data: [DONE]"]
    if task == "error-line":
        return ['error: {"code": 500, "message": "the context size was exceeded", "type": "server_error"}',
                "data: [DONE]"]
    if task == "secrets":
        if turn == 0:
            return [f"data: {chunk(call('read_file', {'path': 'keys.txt'}))}",
                    f"data: {chunk({}, 'tool_calls')}", "data: [DONE]"]
        return [f"data: {chunk({'content': 'DONE: the key is ' + KEYS['google']})}",
                f"data: {chunk({}, 'stop')}", "data: [DONE]"]
    raise AssertionError(f"unknown task {task!r}")


def stub(request: Request, response: Response) -> None:
    body = request.json()
    task = body["messages"][1]["content"].split(":")[0]
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    assert request.headers.get("authorization") == f"Bearer {API_KEY}"
    response.start(200, {"Content-Type": "text/event-stream"})
    response.write("".join(line + "\n\n" for line in answer(task, turn, body)).encode("utf-8"))


def task(task_id: str, verifiers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": task_id, "prompt": f"{task_id}: do the thing", "fixture": "fixtures/base",
            "budget": {"maxTurns": 4, "maxWallMs": 60000}, "policy": {"mode": "auto", "allow": ["write"]},
            "verifiers": verifiers}


def write_suite(root: Path) -> None:
    suite = root / "wire-kinds"
    (suite / "fixtures" / "base").mkdir(parents=True)
    keys = "\n".join(f"{name.upper()}_KEY={value}" for name, value in KEYS.items() if name != "bearer")
    (suite / "fixtures" / "base" / "keys.txt").write_text(
        f"{keys}\nAuthorization: Bearer {KEYS['bearer']}\nhttps://deploy:{KEYS['github']}@git.example.com/r\n")
    leak = "import sys; sys.stderr.write(open('keys.txt').read())"
    suite_doc = {"schemaVersion": 1, "suiteId": "wire-kinds", "suiteVersion": "1.0.0",
                 "description": "Real providers' wire kinds end to end.", "tasks": [
                     task("keepalive", [{"id": "notes", "kind": "file-contains", "path": "notes.txt",
                                         "text": "one\u2028two"}]),
                     task("surrogate", [{"id": "s", "kind": "file-contains", "path": "s.txt", "text": "a\ufffdb"}]),
                     task("error-line", [{"id": "never", "kind": "file-contains", "path": "keys.txt", "text": "K"}]),
                     task("secrets", [{"id": "leaky", "kind": "command", "argv": ["python3", "-c", leak],
                                       "timeoutMs": 30000, "expectExit": 0}])]}
    (suite / "suite.json").write_text(json.dumps(suite_doc, indent=2))


def lab(argv: list[str], data: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = command_env()
    env.update(LAB_DATA_DIR=str(data), **env_extra)
    return run_script(argv, env=env)


def records(data: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in data.glob("wire-kinds/*/runs/*/*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        assert_valid("run-record", record, str(path))
        found[record["taskId"]] = record
    return found


def test_every_kind_records_then_replays(tmp_path: Path) -> None:
    suites, cassettes = tmp_path / "suites", tmp_path / "cassettes"
    write_suite(suites)
    common = [f"suite_dir={suites}", "suite=wire-kinds", f"cassette_dir={cassettes}", "provider=openai",
              "provider.model=stub", "provider.api_key_env=WIRE_STUB_KEY", "provider.stream=true", "yes=true",
              "preflight=false"]
    with LocalHTTPServer() as server:
        server.handler = stub
        recorded = lab(["doit", "record", *common, f"provider.base_url={server.url}/v1",
                        f"+provider.headers.x-api-key={API_KEY}", "+provider.headers.X-Title=lab"],
                       tmp_path / "rec", {"WIRE_STUB_KEY": API_KEY})
        assert not server.errors, server.errors
    # exit 1: the error-line run could not be judged (an infrastructure error, SPEC exit codes)
    assert recorded.returncode == 1, recorded.stdout + recorded.stderr
    assert "error: task error-line run 0: incomplete_response" in recorded.stdout + recorded.stderr
    live = records(tmp_path / "rec")
    assert {t: r["status"] for t, r in live.items()} == {
        "keepalive": "pass", "surrogate": "pass", "error-line": "error", "secrets": "pass"}

    keepalive = live["keepalive"]
    calls = [e for e in keepalive["events"] if e["type"] == "model_call"]
    assert calls[0]["skippedFrames"] == 2
    assert keepalive["usage"] == {"inputTokens": 276, "outputTokens": 40, "cachedInputTokens": 200,
                                  "cacheWriteTokens": 60, "providerCostUsd": 0.005, "cachedPartial": False}
    assert live["surrogate"]["finalMessage"] == "DONE: \ufffd written"
    assert "unencodable_text" in [i["kind"] for i in live["surrogate"]["incidents"]]
    error = live["error-line"]["error"]
    assert error["kind"] == "incomplete_response"
    assert "the server reported: the context size was exceeded" in error["message"]
    assert live["secrets"]["redactions"]

    for path in cassettes.glob("wire-kinds/*.jsonl"):
        assert_jsonl_valid("cassette", path)
    error_cassette = split_lines((cassettes / "wire-kinds" / "error-line.jsonl").read_text(encoding="utf-8"))
    assert json.loads(error_cassette[0])["outcome"] == "error"
    keepalive_calls = [json.loads(line) for line in
                       split_lines((cassettes / "wire-kinds" / "keepalive.jsonl").read_text(encoding="utf-8"))[1:]]
    assert keepalive_calls[0]["requestHeaders"] == {"X-Title": "lab"}
    assert keepalive_calls[0]["droppedHeaders"] == ["x-api-key"]

    # Replay needs neither the stub nor the key, and gives the same outcomes.
    replayed = lab(["doit", "eval", *common, "mode=replay", "provider.base_url=http://127.0.0.1:9/v1"],
                   tmp_path / "replay", {})
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr  # the same error, not a divergence
    again = records(tmp_path / "replay")
    assert {t: r["status"] for t, r in again.items()} == {t: r["status"] for t, r in live.items()}
    assert again["error-line"]["error"]["kind"] == "incomplete_response"
    assert again["keepalive"]["usage"] == keepalive["usage"]
    for report_dir in (tmp_path / "replay").glob("wire-kinds/*/reports/*"):
        assert_jsonl_valid("run-record", report_dir / "runs.jsonl")

    # Nothing the lab wrote holds a key: records, runs.jsonl, events, reports, config.json, cassettes.
    for root in (tmp_path / "rec", tmp_path / "replay", cassettes):
        for path in (p for p in root.rglob("*") if p.is_file()):
            text = path.read_bytes().decode("utf-8", errors="replace")
            for name, value in [*KEYS.items(), ("api", API_KEY)]:
                assert value not in text, f"{name} key in {path}"
