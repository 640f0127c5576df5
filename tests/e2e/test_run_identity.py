"""A run's identity end to end: endpoint and suite version key the store; runtime settings do not.

Every eval here runs the real ``lab run`` in a subprocess against real
OpenAI-compatible servers on 127.0.0.1 (tests/helpers/http_server.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.providers.base import Completion, Usage
from lab.providers.encode import to_json_body, to_sse_events
from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_jsonl_valid, assert_valid

KEY_ENV = "IDENTITY_TEST_KEY"
DONE_TEXT = Completion(content="DONE: nothing needed changing", finish_reason="stop",
                       usage=Usage(input_tokens=10, output_tokens=5))


def write_suite(root: Path, version: str = "1.0.0", max_wall_ms: int = 60000) -> Path:
    """A one-task suite ``idlab`` under ``root`` whose only verifier passes on the untouched fixture."""
    suite = root / "idlab"
    (suite / "fixtures" / "noop").mkdir(parents=True, exist_ok=True)
    (suite / "fixtures" / "noop" / "README.md").write_text("nothing to do\n", encoding="utf-8")
    doc = {"schemaVersion": 1, "suiteId": "idlab", "suiteVersion": version, "description": "identity tests",
           "tasks": [{"id": "noop", "prompt": "Change nothing and answer DONE.", "fixture": "fixtures/noop",
                      "budget": {"maxTurns": 3, "maxWallMs": max_wall_ms}, "policy": {"mode": "auto", "allow": []},
                      "verifiers": [{"id": "untouched", "kind": "file-absent", "path": "changed.txt"}],
                      "tags": []}]}
    (suite / "suite.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return root


def answer(completion: Completion) -> Callable[[Request, Response], None]:
    """A handler answering every call with ``completion``, streamed when the request asks."""
    def handler(request: Request, response: Response) -> None:
        if request.json().get("stream"):
            events = to_sse_events(completion, response_id="c1", model="m")
            body = "".join(f"data: {e}\n\n" for e in events).encode()
            response.send(200, body, content_type="text/event-stream")
        else:
            response.send_json(200, to_json_body(completion, response_id="c1", model="m"))
    return handler


@pytest.fixture
def servers() -> Iterator[tuple[LocalHTTPServer, LocalHTTPServer]]:
    with LocalHTTPServer() as one, LocalHTTPServer() as two:
        yield one, two
        assert not one.errors and not two.errors


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-identity-test-0123456789")


def lab_run(suites: Path, data: Path, *overrides: str, k: int = 1) -> tuple[int, str]:
    result = run_cmd(["lab", "run", f"suite_dir={suites}", "suite=idlab", "yes=true", f"k={k}",
                      "provider=openai", "preflight=false", f"provider.api_key_env={KEY_ENV}", "provider.model=m", *overrides], data)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout + result.stderr


def reports(data: Path) -> dict[str, dict[str, object]]:
    found = {}
    for path in sorted(data.glob("idlab/*/reports/*/report.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert_valid("report", doc, str(path))
        assert_jsonl_valid("run-record", path.parent / "runs.jsonl")
        found[path.parent.name] = doc
    return found


def records(data: Path) -> list[dict[str, object]]:
    """The run records as published beside the one report (runs.jsonl)."""
    [path] = data.glob("idlab/*/reports/*/runs.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_runtime_setting_reuses_the_runs_and_another_endpoint_runs_again(
        tmp_path: Path, servers: tuple[LocalHTTPServer, LocalHTTPServer]) -> None:
    one, two = servers
    one.handler = two.handler = answer(DONE_TEXT)
    suites, data = write_suite(tmp_path / "suites"), tmp_path / "runs"
    assert lab_run(suites, data, f"provider.base_url={one.url}/v1", "provider.stream=false")[0] == 0
    assert len(_calls(one)) == 1
    code, out = lab_run(suites, data, f"provider.base_url={one.url}/v1", "provider.stream=true")
    assert code == 0, out
    assert len(_calls(one)) == 1  # reused
    assert ("up to date: provider.stream (false -> true) is a runtime setting, not part of a run's "
            "identity; force=true to run again") in out
    assert len(reports(data)) == 1
    code, out = lab_run(suites, data, f"provider.base_url={two.url}/v1", "provider.stream=false")
    assert code == 0, out
    assert len(_calls(two)) == 1, out  # executed again: another endpoint is another measured system
    assert "up to date" not in out
    found = reports(data)
    assert len(found) == 2
    endpoints = sorted(str(doc["header"]["endpoint"]["url"]) for doc in found.values())  # type: ignore[index]
    assert endpoints == sorted([f"{one.url}/v1", f"{two.url}/v1"])
    assert len({doc["header"]["configHash"] for doc in found.values()}) == 1  # the same configuration
    assert f"endpoint openai {two.url}/v1" in out  # the closing lines state it


def test_a_suite_changed_without_a_version_bump_is_refused_until_overwrite_and_a_new_version_keeps_the_old_baseline(
        tmp_path: Path, servers: tuple[LocalHTTPServer, LocalHTTPServer]) -> None:
    one, _ = servers
    one.handler = answer(DONE_TEXT)
    suites, data = write_suite(tmp_path / "suites"), tmp_path / "runs"
    base = f"provider.base_url={one.url}/v1"
    assert lab_run(suites, data, base)[0] == 0
    [store] = data.glob("idlab/*")
    [report_dir] = store.glob("reports/*")
    kept = {p: p.read_bytes() for p in [*store.glob("runs/**/*.json"), *(p for p in report_dir.rglob("*") if p.is_file())]}
    marker = json.loads((store / "suite-digest.json").read_text(encoding="utf-8"))
    assert_valid("suite-digest", marker, "suite-digest.json")
    old_digest = str(marker["suiteDigest"])
    fixture = suites / "idlab" / "fixtures" / "noop" / "README.md"
    fixture.write_text("nothing to do, really\n", encoding="utf-8")  # a changed fixture, suiteVersion 1.0.0 kept

    for extra in ([], ["force=true"], ["k=2"]):  # neither force nor a larger k gets past it
        code, out = lab_run(suites, data, base, *extra)
        assert code == 1, out
        [line] = [line for line in out.splitlines() if "suiteVersion" in line]
        assert line.startswith("suite idlab 1.0.0: its files changed but suiteVersion did not"), line
        assert old_digest[:12] in line and "bump suiteVersion" in line and "overwrite=true" in line, line
    assert len(_calls(one)) == 1  # refused before any run
    assert {p: p.read_bytes() for p in kept} == kept  # the old records and report are still on disk

    code, out = lab_run(suites, data, base, "overwrite=true")
    assert code == 0, out
    assert len(_calls(one)) == 2  # executed again, under the same store and run id
    [doc] = reports(data).values()
    new_digest = str(doc["header"]["suiteDigest"])  # type: ignore[index]
    assert new_digest != old_digest
    assert records(data)[0]["inputs"]["suiteDigest"] == new_digest  # type: ignore[index]
    assert json.loads((store / "suite-digest.json").read_text(encoding="utf-8"))["suiteDigest"] == new_digest
    code, out = lab_run(suites, data, base)  # the replaced results are this version's now
    assert code == 0 and len(_calls(one)) == 2, out

    # A new suiteVersion runs under its own store and run id; the old version's report is kept as it was.
    before = {p.relative_to(report_dir): p.read_bytes() for p in report_dir.rglob("*") if p.is_file()}
    write_suite(tmp_path / "suites", version="1.1.0")
    code, out = lab_run(suites, data, base)
    assert code == 0, out
    assert len(_calls(one)) == 3  # the new version ran
    assert {p.relative_to(report_dir): p.read_bytes() for p in report_dir.rglob("*") if p.is_file()} == before
    versions = sorted(str(doc["header"]["suiteVersion"]) for doc in reports(data).values())
    assert versions == ["1.0.0", "1.1.0"]
    assert ".v1.0.0." in report_dir.name
    old_id, new_id = sorted(reports(data))  # run ids: v1.0.0 sorts first
    compared = run_cmd(["lab", "compare", old_id, new_id], data)
    assert compared.returncode == 3, compared.stdout + compared.stderr  # refused as before: another version
    assert "Traceback" not in compared.stderr


def test_an_empty_completion_is_an_incident_and_a_mid_stream_overload_is_retried_and_counted(
        tmp_path: Path, servers: tuple[LocalHTTPServer, LocalHTTPServer]) -> None:
    # Two runs one after the other: the first call is cut by an overload error mid-stream and retried (a
    # good answer), every later call is an empty completion.
    one, _ = servers
    good = answer(DONE_TEXT)
    empty = answer(Completion(content=None, finish_reason="stop", usage=Usage(input_tokens=3, output_tokens=0)))

    def handler(request: Request, response: Response) -> None:
        calls = len(_calls(one))
        if calls == 1:
            body = (b'data: {"id":"c0","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
                    b'{"role":"assistant","content":"Wor"}}]}\n\n'
                    b'data: {"error":{"message":"Overloaded","type":"overloaded_error"}}\n\n')
            response.send(200, body, content_type="text/event-stream")
        elif calls == 2:
            good(request, response)
        else:
            empty(request, response)
    one.handler = handler
    suites, data = write_suite(tmp_path / "suites"), tmp_path / "runs"
    code, out = lab_run(suites, data, f"provider.base_url={one.url}/v1", "provider.stream=true", "jobs=1", k=2)
    assert code == 0, out
    [doc] = reports(data).values()
    runs = records(data)
    assert len(runs) == 2
    [overloaded] = [r for r in runs if r["retries"]]
    [run] = [r for r in runs if r is not overloaded]
    assert [i["kind"] for i in run["incidents"]] == ["empty_response"]  # type: ignore[attr-defined]
    assert run["status"] == "pass"  # the verifiers decide; the incident is counted beside
    assert doc["summary"]["emptyResponses"] == 1  # type: ignore[index]
    assert overloaded["status"] == "pass"
    assert overloaded["retries"] == 1
    assert not overloaded["incidents"]
    [retry] = [e for e in overloaded["events"] if e["type"] == "retry"]  # type: ignore[attr-defined]
    assert retry["cause"] == "server" and "Overloaded (type overloaded_error)" in retry["reason"]


def test_a_typed_400_is_shown_on_one_line(tmp_path: Path, servers: tuple[LocalHTTPServer, LocalHTTPServer]) -> None:
    one, _ = servers
    error = {"error": {"message": "Authentication failed:\nno database\n  connection", "type": "no_db_connection",
                       "code": "400"}}
    one.handler = lambda request, response: response.send_json(400, error)
    suites, data = write_suite(tmp_path / "suites"), tmp_path / "runs"
    code, out = lab_run(suites, data, f"provider.base_url={one.url}/v1", "provider.stream=false")
    assert code == 1, out
    assert len(_calls(one)) == 1  # a bad request is not retried
    [line] = [x for x in out.splitlines() if x.startswith("error: task noop")]
    assert line.endswith("HTTP 400: Authentication failed: no database connection (type no_db_connection, code 400)")
    [progress] = [x for x in out.splitlines() if x.strip().startswith("error ") and "noop r0" in x]
    assert "no database connection (type no_db_connection" in progress
    [run] = records(data)
    assert run["error"]["status"] == 400  # type: ignore[index]
    assert run["error"]["server"] == {"message": "Authentication failed: no database connection",
                                      "type": "no_db_connection", "code": "400"}


def _calls(server: Any) -> list[Any]:
    """The chat-completions requests a stub received (the preflight's GET /models left out)."""
    return [r for r in server.requests if r.method == "POST"]
