"""A small eval under injected faults, end to end through the real `lab` and `doit` commands.

Each fault must end in one line naming the place, the documented exit code,
no traceback, and records on disk that equal the published report
(docs/faults.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.http_server import LocalHTTPServer, Request, Response
from tests.helpers.lab_process import BIN, ROOT, run_cmd
from tests.helpers.schemas import assert_jsonl_valid, assert_valid

pytestmark = pytest.mark.slow

ANSWER = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "I could not do it."}}],
          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class Stub:
    """A loopback OpenAI-compatible endpoint that refuses (HTTP 503) until ``up`` is set."""

    def __init__(self, server: LocalHTTPServer) -> None:
        self.server = server
        self.up = threading.Event()
        server.handler = self.answer

    def answer(self, request: Request, response: Response) -> None:
        if self.up.is_set():
            response.send_json(200, ANSWER)
        else:
            response.send_json(503, {"error": {"message": "service unavailable"}})

    @property
    def calls(self) -> int:
        return len(self.server.requests)


@pytest.fixture
def stub() -> Iterator[Stub]:
    with LocalHTTPServer() as server:
        yield Stub(server)
        assert not server.errors


def live_args(stub: Stub, *more: str) -> list[str]:
    return ["suite=smoke-coding", "provider=openai", f"provider.base_url={stub.server.url}/v1",
            "provider.stream=false", "provider.max_retries=0", "provider.api_key_env=LAB_TEST_KEY",
            "tasks=[rename-symbol]", "k=2", *more]


def run_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    env.update(LAB_DATA_DIR=str(data_dir), **extra)
    return env


def lab(args: list[str], data_dir: Path, exe: str = "lab", **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / exe), "run" if exe == "lab" else "eval", *args], cwd=ROOT,
                          env=run_env(data_dir, **extra), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, check=False)


def record_files(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("*/*/runs/*/*.json"))


def assert_report_matches_records(data_dir: Path) -> dict[str, object]:
    """The published report and runs.jsonl hold exactly the records on disk (schemas checked)."""
    report_dir = next(data_dir.glob("*/*/reports/*"))
    report = json.loads((report_dir / "report.json").read_text())
    assert_valid("report", report, str(report_dir))
    assert_jsonl_valid("run-record", report_dir / "runs.jsonl")
    on_disk = sorted((json.loads(p.read_text()) for p in record_files(data_dir)),
                     key=lambda r: (r["taskId"], r["repetition"]))
    published = sorted((json.loads(line) for line in (report_dir / "runs.jsonl").read_text().splitlines()),
                       key=lambda r: (r["taskId"], r["repetition"]))
    assert [(r["taskId"], r["repetition"], r["status"], r["startedAt"]) for r in published] == \
        [(r["taskId"], r["repetition"], r["status"], r["startedAt"]) for r in on_disk]
    return dict(report)


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# 1. A run that failed for infrastructure reasons is not a result: the next command runs it again.

def test_refused_runs_execute_again_once_the_provider_answers(tmp_path: Path, stub: Stub) -> None:
    first = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert first.returncode == 1, first.stdout + first.stderr  # infrastructure errors: exit 1
    assert stub.calls == 2
    assert [json.loads(p.read_text())["status"] for p in record_files(tmp_path)] == ["error", "error"]

    stub.up.set()
    second = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "up to date" not in second.stdout
    assert stub.calls == 4
    report = assert_report_matches_records(tmp_path)
    assert report["summary"]["errors"] == 0  # type: ignore[index]
    assert [r["status"] for r in report["runs"]] == ["fail", "fail"]  # type: ignore[index]

    third = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert "2 run(s) up to date" in third.stdout
    assert stub.calls == 4


def test_missing_credentials_then_set_runs_again(tmp_path: Path, stub: Stub) -> None:
    stub.up.set()
    first = lab(live_args(stub), tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    assert stub.calls == 0
    assert "LAB_TEST_KEY" in first.stdout
    second = lab(live_args(stub), tmp_path, LAB_TEST_KEY="sk-test")
    assert stub.calls == 2
    assert [r["status"] for r in assert_report_matches_records(tmp_path)["runs"]] == ["fail", "fail"]  # type: ignore[index]
    assert second.returncode == 0
