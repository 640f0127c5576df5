"""Whatever the provider does, a run ends within its wall budget and writes bounded files.

Real ``lab run`` subprocesses against real servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.execute.fieldcap import FIELD_CHARS
from lab.providers.base import Completion, Usage
from tests.e2e.test_run_identity import KEY_ENV, answer, lab_run, records, write_suite
from tests.helpers.http_server import LocalHTTPServer, Request, Response


@pytest.fixture
def server() -> Iterator[LocalHTTPServer]:
    with LocalHTTPServer() as one:
        yield one


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-limits-test-0123456789")


def test_keep_alive_only_stream_ends_the_run_at_its_wall_budget(tmp_path: Path, server: LocalHTTPServer,
                                                                release: threading.Event) -> None:
    def handler(request: Request, response: Response) -> None:
        response.start(200, {"Content-Type": "text/event-stream"}, chunked=True)
        while not release.is_set():
            response.write(b": keep-alive\n\n")
            release.wait(0.05)

    server.handler = handler
    suites, data = write_suite(tmp_path / "suites", max_wall_ms=1500), tmp_path / "runs"
    code, out = lab_run(suites, data, f"provider.base_url={server.url}/v1", "provider.stream=true",
                        "provider.timeout_s=600")
    assert code == 0, out
    [run] = records(data)
    assert (run["status"], run["budgetExceeded"]) == ("budget_exceeded", "maxWallMs")


def test_an_oversized_answer_is_an_error_and_is_not_kept(tmp_path: Path, server: LocalHTTPServer) -> None:
    filler = "y" * 3_000_000
    body = json.dumps({"choices": [{"index": 0, "message": {"content": filler}, "finish_reason": "stop"}]})
    server.handler = lambda request, response: response.send(200, body.encode())
    suites, data = write_suite(tmp_path / "suites"), tmp_path / "runs"
    code, out = lab_run(suites, data, f"provider.base_url={server.url}/v1", "provider.stream=false",
                        "provider.max_response_bytes=1048576")
    assert code == 1, out
    [run] = records(data)
    assert run["status"] == "error"
    assert run["error"]["cause"] == "response_too_large"  # type: ignore[index]
    assert len(_calls(server)) == 1
    written = sum(p.stat().st_size for p in data.rglob("*") if p.is_file() and p.suffix != ".sqlite")
    assert written < 200_000, written


def test_one_long_field_is_capped_in_every_written_file(tmp_path: Path, server: LocalHTTPServer) -> None:
    final = "DONE: " + "z" * (FIELD_CHARS * 3)
    server.handler = answer(Completion(content=final, finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=1)))
    suites, data = write_suite(tmp_path / "suites"), tmp_path / "runs"
    code, out = lab_run(suites, data, f"provider.base_url={server.url}/v1", "provider.stream=false")
    assert code == 0, out
    [run] = records(data)
    message = str(run["finalMessage"])
    assert message.endswith(f"… [cut: {len(final)} chars in all]")
    assert len(message) < FIELD_CHARS + 100
    for path in data.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".html"):
            assert path.read_text(encoding="utf-8").count("z" * 100) <= FIELD_CHARS // 100 * 2, path


def _calls(server: Any) -> list[Any]:
    """The chat-completions requests a stub received (the preflight's GET /models left out)."""
    return [r for r in server.requests if r.method == "POST"]
