"""The Python API (docs/api.md): run_eval with callbacks, summarise_records, attempts from 1."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab import Attempt, EvalSummary, IncompatibleRecords, LabError, run_eval, summarise_records
from lab.errors import RecordVersionError
from tests.helpers.lab_process import ROOT, command_env
from tests.helpers.records import make_record
from tests.helpers.schemas import assert_valid

TWO_TASKS = "tasks=[edit-file,write-new-file]"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


@pytest.mark.slow
def test_run_eval_calls_back_and_returns_a_typed_summary(data_dir: Path) -> None:
    attempts: list[Attempt] = []
    events: list[dict[str, Any]] = []
    summary = run_eval(["suite=core", "provider=scripted", "k=2", TWO_TASKS],
                       on_attempt=attempts.append, on_event=events.append)
    assert isinstance(summary, EvalSummary) and summary.exit_code == 0
    assert sorted((a.task_id, a.attempt) for a in attempts) == [("edit-file", 1), ("edit-file", 2),
                                                                ("write-new-file", 1), ("write-new-file", 2)]
    assert all(a.record["repetition"] == a.attempt - 1 for a in attempts)
    assert (summary.passes, summary.judged, summary.k, summary.mode) == (4, 4, 2, "live")
    assert [t.task_id for t in summary.tasks] == ["edit-file", "write-new-file"]
    assert summary.wilson95 is not None and summary.wilson95[0] < 1.0
    assert events[0]["event"] == "eval_started" and events[-1]["event"] == "eval_finished"
    finished = [e for e in events if e["event"] == "run_finished"]
    assert len(finished) == 4 and {e["attempt"] for e in finished} == {1, 2}
    assert_valid("report", summary.report, "summary.report")
    # A second identical call executes nothing: no attempt callback, same figures.
    again: list[Attempt] = []
    second = run_eval(["suite=core", "provider=scripted", "k=2", TWO_TASKS], on_attempt=again.append)
    assert again == [] and (second.passes, len(second.attempts)) == (4, 4)


def test_runs_in_threads_write_to_the_process_streams_not_to_swapped_capture_buffers(data_dir: Path) -> None:
    # doit's output capture swaps sys.stdout for the whole process while an action runs; runs in several
    # threads then write through each other's stale buffers, and CPython can crash there. Every run
    # action must see the process's own streams, the same objects in every thread.
    from doit.action import Writer

    seen: list[tuple[Any, Any]] = []
    summary = run_eval(["suite=core", "provider=scripted", "k=3", TWO_TASKS, "jobs=2"],
                       on_attempt=lambda _: seen.append((sys.stdout, sys.stderr)))
    assert summary.exit_code == 0 and len(seen) == 6
    assert len({id(out) for out, _ in seen}) == 1 and len({id(err) for _, err in seen}) == 1, seen
    assert not isinstance(seen[0][0], Writer) and not isinstance(seen[0][1], Writer)


def test_run_eval_raises_the_reason_and_ends_events_with_run_error(data_dir: Path) -> None:
    events: list[dict[str, Any]] = []
    with pytest.raises(LabError, match="which is not granted"):
        run_eval(["suite=core", "provider=scripted", "allow=[]"], on_event=events.append)
    assert events[-1]["event"] == "run_error" and events[-1]["exitCode"] == 1


@pytest.mark.slow
def test_a_failing_callback_is_raised_after_the_eval(data_dir: Path) -> None:
    calls: list[int] = []

    def boom(attempt: Attempt) -> None:
        calls.append(attempt.attempt)
        raise ValueError("callback failed")

    with pytest.raises(ValueError, match="callback failed"):
        run_eval(["suite=core", "provider=scripted", "k=2", "tasks=[edit-file]"], on_attempt=boom)
    assert calls == [1]  # no callback after the first failure
    assert len(list(data_dir.glob("core/*/runs/edit-file/*.json"))) == 2  # the eval finished


@pytest.mark.slow
def test_ctrl_c_cancels_run_eval_and_the_programs_own_handlers_come_back(data_dir: Path) -> None:
    """During the eval Ctrl-C cancels it (KeyboardInterrupt, no record of the run cut short); afterwards
    the program's own SIGINT handler and excepthook are in force again, whether it was cancelled or not."""
    def mine(*args: object) -> None:  # the program's SIGINT handler and excepthook
        raise AssertionError("the program's handler ran during the eval")

    started: list[str] = []

    def interrupt(event: dict[str, Any]) -> None:
        if event["event"] == "run_started":
            started.append(event["taskId"])
            if len(started) == 2:
                signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C as the second run starts

    found, hook = signal.getsignal(signal.SIGINT), sys.excepthook
    term = signal.getsignal(signal.SIGTERM)  # the default, or what an earlier test left (Ray's shutdown hook)
    signal.signal(signal.SIGINT, mine)
    sys.excepthook = mine
    try:
        with pytest.raises(KeyboardInterrupt):
            run_eval(["suite=core", "provider=scripted", "k=1", TWO_TASKS], on_event=interrupt)
        assert signal.getsignal(signal.SIGINT) is mine and sys.excepthook is mine
        assert signal.getsignal(signal.SIGTERM) is term
        assert [p.parent.name for p in data_dir.glob("core/*/runs/*/*.json")] == started[:1]
        summary = run_eval(["suite=core", "provider=scripted", "k=1", TWO_TASKS])  # resumes
        assert summary.exit_code == 0 and summary.judged == 2
        assert signal.getsignal(signal.SIGINT) is mine and sys.excepthook is mine
    finally:
        signal.signal(signal.SIGINT, found)
        sys.excepthook = hook


STATUS = {"P": "pass", "F": "fail"}


def records(tasks: dict[str, str], **kwargs: Any) -> list[dict[str, Any]]:
    """Valid run records of suite toy 1.0.0, configuration c…c: one per letter (P pass, F fail)."""
    return [{**make_record(task_id, i, status=STATUS[letter], suite_id="toy"), "suiteDigest": "d" * 64,
             "configHash": "c" * 64, **kwargs}
            for task_id, letters in tasks.items() for i, letter in enumerate(letters)]


def test_summarise_records_counts_attempts_from_one() -> None:
    summary = summarise_records(records({"a": "PPF", "b": "P"}))
    assert (summary.passes, summary.judged, summary.k, summary.exit_code, summary.run_id) == (3, 4, 3, None, None)
    assert [(a.task_id, a.attempt, a.status) for a in summary.attempts] == [
        ("a", 1, "pass"), ("a", 2, "pass"), ("a", 3, "fail"), ("b", 1, "pass")]
    assert summary.tasks[0].flaky and summary.tasks[0].success_rate == pytest.approx(2 / 3)


def test_summarise_records_reads_files_jsonl_and_directories(tmp_path: Path) -> None:
    docs = records({"a": "PF"})
    for r in docs:
        path = tmp_path / "store" / "runs" / "a" / f"s0-r{r['repetition']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in docs))
    for source in (tmp_path / "store", tmp_path / "runs.jsonl", str(tmp_path / "runs.jsonl"),
                   sorted((tmp_path / "store").rglob("*.json"))):
        assert (summarise_records(source).passes, summarise_records(source).judged) == (1, 2)


@pytest.mark.parametrize(("change", "message"), [
    ({"suiteId": "other"}, "records of another suite"),
    ({"suiteVersion": "1.1.0"}, "records of another suite version"),
    ({"suiteDigest": "e" * 64}, "records of another suite digest"),
    ({"configHash": "f" * 64}, "records of another configuration"),
])
def test_summarise_records_refuses_another_eval(change: dict[str, str], message: str) -> None:
    mixed = records({"a": "PP"}) + records({"b": "P"}, **change)
    with pytest.raises(IncompatibleRecords, match=message):
        summarise_records(mixed)


@pytest.mark.parametrize(("wanted", "message"), [
    ({"suite_id": "core"}, "records of suite toy, expected core"),
    ({"suite_version": "2.0.0"}, "expected 2.0.0"),
    ({"config_hash": "abc"}, "records of configuration c+, expected abc"),
])
def test_summarise_records_checks_what_was_asked(wanted: dict[str, str], message: str) -> None:
    with pytest.raises(IncompatibleRecords, match=message):
        summarise_records(records({"a": "P"}), **wanted)
    assert summarise_records(records({"a": "P"}), config_hash="c" * 12).passes == 1


def test_summarise_records_refuses_a_run_given_twice() -> None:
    with pytest.raises(IncompatibleRecords, match="task a attempt 1 .base seed 0. is given twice"):
        summarise_records(records({"a": "P"}) * 2)


def test_summarise_records_validates_every_record(tmp_path: Path) -> None:
    bad = records({"a": "P"})[0]
    bad["status"] = "passed"
    (tmp_path / "runs.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(LabError, match=r"runs.jsonl:1: not a run record: status: 'passed' is not one of"):
        summarise_records(tmp_path / "runs.jsonl")
    with pytest.raises(RecordVersionError, match="schemaVersion 9 is newer"):
        summarise_records([{**records({"a": "P"})[0], "schemaVersion": 9}])
    with pytest.raises(LabError, match="no run record found"):
        summarise_records([])


@pytest.mark.slow
def test_the_docs_example_runs_as_pasted(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert example is not None
    env = command_env()
    env["LAB_DATA_DIR"] = str(tmp_path / "runs")
    result = subprocess.run([sys.executable, "-c", example.group(1)], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "core 1.0.0 replay exit 0" in lines and "2/2 passed; success rate 100%" in lines
    assert lines[-1] == "[('edit-file', 1), ('write-new-file', 1)]"
    assert sorted(line.split(":")[0] for line in lines[:2]) == ["edit-file attempt 1", "write-new-file attempt 1"]
