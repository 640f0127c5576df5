"""Executor status totals (succeeded / failed / cancelled / timed out) in every report file and the closing lines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.report import build_report, write_report_from_files
from lab.report.closing import summarise
from lab.report.executor_status import EXECUTOR_STATUSES, executor_status
from lab.report.tally import ReportTally
from tests.helpers.chromium import dump_dom
from tests.helpers.dom import parse
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid


def command(record: dict[str, Any], *, exit_code: int | None = 0, signal: str | None = None,
            ended_by_lab: str | None = None) -> dict[str, Any]:
    """``record`` as a command agent's run: its agent and executor blocks (as lab.execute.command_run writes them)."""
    record["agent"] = {"name": "reference", "version": "1.0.0", "api": "chat"}
    record["executor"] = {"exitCode": exit_code, "signal": signal, "durationMs": 900, "stdoutBytes": 10,
                          "stderrBytes": 0, "stderrTail": "", "endedByLab": ended_by_lab}
    return record


def built_in(status: str = "pass", **fields: Any) -> dict[str, Any]:
    record = make_record("t", 0, status=status)
    record.update(fields)
    return record


CASES = [
    ("built-in answered, passed", built_in("pass"), "succeeded"),
    ("built-in answered, failed its verifiers", built_in("fail"), "succeeded"),
    ("built-in ran out of turns", built_in("budget_exceeded"), "failed"),
    ("built-in stopped at maxWallMs", built_in("budget_exceeded", budgetExceeded="maxWallMs"), "timedOut"),
    ("built-in response truncated", built_in("fail", stopReason="truncated"), "failed"),
    ("built-in cancelled", built_in("fail", stopReason="cancelled"), "cancelled"),
    ("provider error", built_in("error"), "failed"),
    ("replay divergence", built_in("error", error={"kind": "replay_divergence", "message": "call 2"}), "failed"),
    ("command exit 0", command(built_in("pass")), "succeeded"),
    ("command exit 0, failed its verifiers", command(built_in("fail")), "succeeded"),
    ("command exit 3", command(built_in("fail", stopReason="error"), exit_code=3), "failed"),
    ("command killed by a signal", command(built_in("fail", stopReason="error"), exit_code=None, signal="SIGSEGV"),
     "failed"),
    ("command ended at maxWallMs", command(built_in("budget_exceeded", budgetExceeded="maxWallMs"), exit_code=None,
                                           signal="SIGTERM", ended_by_lab="maxWallMs"), "timedOut"),
    ("command over maxTurns at the gateway", command(built_in("budget_exceeded"), exit_code=1), "failed"),
    ("command cancelled", command(built_in("fail", stopReason="cancelled"), exit_code=None, signal="SIGTERM",
                                  ended_by_lab="cancelled"), "cancelled"),
    ("command gateway outage", command(built_in("error")), "failed"),
]


@pytest.mark.parametrize("record, expected", [(r, e) for _, r, e in CASES], ids=[n for n, _, _ in CASES])
def test_each_way_a_run_ends_has_its_executor_status(record: dict[str, Any], expected: str) -> None:
    assert_valid("run-record", record, "record")
    assert executor_status(record) == expected


FIELDS = st.fixed_dictionaries({
    "status": st.sampled_from(["pass", "fail", "budget_exceeded", "error"]),
    "stopReason": st.sampled_from([None, "answered", "budget_exceeded", "truncated", "cancelled", "error"]),
    "budgetExceeded": st.sampled_from([None, "maxTurns", "maxWallMs", "maxTokens", "maxToolCalls"]),
    "executor": st.none() | st.fixed_dictionaries({
        "exitCode": st.sampled_from([None, 0, 1, 137]), "signal": st.sampled_from([None, "SIGTERM", "SIGKILL"]),
        "endedByLab": st.sampled_from([None, "maxWallMs", "cancelled", "maxTurns"])}),
    "task": st.sampled_from(["a", "b", "c"]),
})


@settings(max_examples=40, deadline=None)
@given(st.lists(FIELDS, max_size=12))
def test_every_run_counts_in_exactly_one_total_per_task_and_overall(runs: list[dict[str, Any]]) -> None:
    records = []
    for n, fields in enumerate(runs):
        record = make_record(fields["task"], n, status=fields["status"])
        record.update(stopReason=fields["stopReason"], budgetExceeded=fields["budgetExceeded"])
        if fields["executor"] is not None:
            command(record, exit_code=fields["executor"]["exitCode"], signal=fields["executor"]["signal"],
                    ended_by_lab=fields["executor"]["endedByLab"])
        records.append(record)
    doc = build_report(make_header(), records)
    overall = doc["summary"]["executorStatus"]
    assert sum(overall.values()) == doc["summary"]["runs"] == len(records)
    for task in doc["tasks"]:
        assert sum(task["executorStatus"].values()) == task["runs"]
    assert {key: sum(t["executorStatus"][key] for t in doc["tasks"]) for key in EXECUTOR_STATUSES} == overall
    assert overall == {key: sum(executor_status(r) == key for r in records) for key in EXECUTOR_STATUSES}


def mixed_records() -> list[dict[str, Any]]:
    """Two tasks: built-in runs (answered, out of turns, provider error) and command runs (exit 0, exit 2,
    ended at maxWallMs, cancelled)."""
    builtin = [make_record("builtin", 0, status="pass"), make_record("builtin", 1, status="fail"),
               make_record("builtin", 2, status="budget_exceeded"), make_record("builtin", 3, status="error")]
    commands = [command(make_record("command", 0, status="pass")),
                command(make_record("command", 1, status="fail"), exit_code=2),
                command(make_record("command", 2, status="budget_exceeded"), exit_code=None, signal="SIGTERM",
                        ended_by_lab="maxWallMs"),
                command(make_record("command", 3, status="fail"), exit_code=None, signal="SIGTERM",
                        ended_by_lab="cancelled")]
    commands[1]["stopReason"] = "error"
    commands[2]["budgetExceeded"] = "maxWallMs"
    commands[3]["stopReason"] = "cancelled"
    return builtin + commands


EXPECTED = {"builtin": {"succeeded": 2, "failed": 2, "cancelled": 0, "timedOut": 0},
            "command": {"succeeded": 1, "failed": 1, "cancelled": 1, "timedOut": 1}}


@pytest.fixture
def report(tmp_path: Path) -> Path:
    from lab.files import write_json

    paths = []
    for record in mixed_records():
        path = tmp_path / "runs" / record["taskId"] / f"s0-r{record['repetition']}.json"
        write_json(path, record)
        paths.append(path)
    write_report_from_files(tmp_path / "report", make_header(k=4), paths)
    return tmp_path / "report"


def test_report_json_counts_per_task_and_overall(report: Path) -> None:
    import json

    doc = json.loads((report / "report.json").read_text(encoding="utf-8"))
    assert_valid("report", doc, "report.json")
    assert {t["taskId"]: t["executorStatus"] for t in doc["tasks"]} == EXPECTED
    assert doc["summary"]["executorStatus"] == {"succeeded": 3, "failed": 3, "cancelled": 1, "timedOut": 1}


def test_report_md_has_a_row_per_task_and_the_total(report: Path) -> None:
    text = (report / "report.md").read_text(encoding="utf-8")
    section = text.split("## Executor status\n", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.strip().splitlines()]
    assert rows[0] == ["task", "succeeded", "failed", "cancelled", "timed out"]
    assert rows[2:] == [["builtin", "2", "2", "0", "0"], ["command", "1", "1", "1", "1"], ["all", "3", "3", "1", "1"]]


def test_the_closing_lines_give_the_totals(report: Path) -> None:
    _, text = summarise(report)
    assert "executor: 3 succeeded, 3 failed, 1 cancelled, 1 timed out" in text.splitlines()
    command_row = next(line for line in text.splitlines() if line.startswith("command "))
    assert re.search(r"1 succeeded, 1 failed, 1 cancelled, 1 timed out", command_row), command_row
    builtin_row = next(line for line in text.splitlines() if line.startswith("builtin "))
    assert "2 succeeded, 2 failed" in builtin_row and "cancelled" not in builtin_row, builtin_row


def test_a_report_of_no_runs_counts_zero(tmp_path: Path) -> None:
    doc = ReportTally(make_header(), planned_tasks=["a"]).document()
    assert doc["summary"]["executorStatus"] == dict.fromkeys(EXECUTOR_STATUSES, 0)
    assert doc["tasks"][0]["executorStatus"] == dict.fromkeys(EXECUTOR_STATUSES, 0)


@pytest.mark.slow
def test_index_html_shows_the_totals_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    page = parse(dump_dom((report / "index.html").as_uri(), tmp_path))
    table = page.by_id("executor-totals")
    rows = [[cell.text() for cell in row.children] for row in table.find_all("tr")]
    assert rows == [["task", "succeeded", "failed", "cancelled", "timed out"], ["builtin", "2", "2", "0", "0"],
                    ["command", "1", "1", "1", "1"], ["all", "3", "3", "1", "1"]]
    assert "total" in table.find_all("tr")[-1].classes
