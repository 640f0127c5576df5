"""Every handled failure ends the lifecycle event stream with ``run_error`` (SPEC X6), under lab and doit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd


def events_of(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith('{"')]


@pytest.mark.parametrize("command", [["lab", "run"], ["doit", "eval"]])
@pytest.mark.parametrize(("overrides", "reason"), [
    (["suite=core", "provider=scripted", "allow=[]"], "which is not granted"),
    # Alone beside progress=true: a refused override is composed again with each good one before it, to find
    # every bad one (lab/config/compose.py), and suite= and provider= change nothing about an unknown key.
    (["kk=3"], "unknown key 'kk'"),
], ids=["allow=[]", "kk=3"])
def test_a_setup_failure_ends_with_run_error(tmp_path: Path, command: list[str], overrides: list[str],
                                             reason: str) -> None:
    result = run_cmd([*command, "progress=true", *overrides], tmp_path)
    assert result.returncode == 1
    events = events_of(result.stderr)
    assert len(events) == 1 and events[-1]["event"] == "run_error"
    assert reason in str(events[-1]["reason"]) and events[-1]["exitCode"] == 1
    assert events[-1]["schema"] == "lab.event.v1"


def test_without_progress_no_event_is_printed(tmp_path: Path) -> None:
    result = run_cmd(["lab", "run", "suite=core", "provider=scripted", "allow=[]"], tmp_path)
    assert result.returncode == 1 and events_of(result.stderr) == []


@pytest.mark.slow
@pytest.mark.parametrize("command", [["lab", "run"], ["doit", "eval"]])
def test_a_replay_divergence_ends_with_run_error(tmp_path: Path, command: list[str]) -> None:
    cassettes, data = tmp_path / "cassettes", tmp_path / "runs"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    result = run_cmd([*command, "suite=core", "mode=replay", "tasks=[edit-file]", f"cassette_dir={cassettes}",
                      "agent.max_output_tokens=1000", "progress=true"], data)
    assert result.returncode == 2, result.stderr
    events = events_of(result.stderr)
    assert [e["event"] for e in events[-2:]] == ["eval_finished", "run_error"]
    assert events[-1]["exitCode"] == 2 and "replay divergence" in str(events[-1]["reason"])
    saved = [json.loads(line) for line in next(data.glob("core/*/history.jsonl")).read_text().splitlines()]
    assert saved[-1]["event"] == "run_error"


def test_a_failed_ci_gate_ends_with_run_error(tmp_path: Path) -> None:
    empty = tmp_path / "no-cassettes"
    empty.mkdir()
    result = run_cmd(["lab", "ci", "suite=core", f"cassette_dir={empty}", "progress=true"], tmp_path / "runs")
    assert result.returncode == 1
    events = events_of(result.stderr)
    assert events[-1]["event"] == "run_error" and events[-1]["exitCode"] == 1


def test_a_key_quoted_in_a_reason_never_reaches_the_event_files(tmp_path: Path) -> None:
    """A reason may quote what a server or an agent sent: the key is masked in history.jsonl too."""
    from lab.execute.events import EventLog, emit_run_error
    from tests.helpers.key_corpus import corpus

    entries = corpus()
    log = EventLog({"suiteId": "s"}, path=tmp_path / "history.jsonl")
    for text, _ in entries.values():
        emit_run_error(log, "provider answered 401: " + " ".join(text.split()), 1)
    written = (tmp_path / "history.jsonl").read_text(encoding="utf-8")
    assert written.count("run_error") == len(entries)
    assert [name for name, (_, values) in entries.items() if any(v in written for v in values)] == []
    assert "<secret:" in written
