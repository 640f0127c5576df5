"""`lab gate`: the CI verdict on a report (library and the real console script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.compare.gate import evaluate, load_report
from lab.errors import LabError, RecordVersionError
from lab.report import build_report, write_report
from tests.helpers.lab_process import run_cmd
from tests.helpers.records import make_header, make_record

DIVERGED = {"kind": "replay_divergence", "message": "call 0: request differs at messages[1].content"}


def doc_of(*records: dict) -> dict:
    """A report whose k is the most runs any task has (a complete eval unless a task has fewer)."""
    k = max([sum(1 for r in records if r["taskId"] == t["taskId"]) for t in records] or [1])
    return build_report(make_header(k=k), list(records))


def test_all_passed_is_exit_0() -> None:
    result = evaluate(doc_of(make_record("a", 0), make_record("b", 0)))
    assert (result.code, result.reasons) == (0, ())
    assert result.headline.startswith("gate: pass — 2/2 judged runs passed")


def test_a_failed_task_is_exit_1_naming_it() -> None:
    result = evaluate(doc_of(make_record("a", 0), make_record("b", 0, status="fail")), min_pass_rate=0.0)
    assert result.code == 1
    assert result.reasons == ("task b failed: 0/1 judged runs passed",)


def test_flaky_task_fails_unless_allowed() -> None:
    doc = doc_of(make_record("a", 0), make_record("a", 1, status="fail"), make_record("a", 2))
    assert evaluate(doc, min_pass_rate=0.5).reasons == (
        "task a is flaky: 2/3 judged runs passed (allow_flaky=true accepts it)",)
    assert evaluate(doc, min_pass_rate=0.5, allow_flaky=True).code == 0


def test_allowing_flaky_still_applies_the_rate_threshold() -> None:
    doc = doc_of(make_record("a", 0), make_record("a", 1, status="fail"))
    result = evaluate(doc, allow_flaky=True)
    assert result.code == 1
    assert result.reasons == ("success rate 50.0% is below min_pass_rate 100.0%",)


def test_an_errored_run_is_exit_1() -> None:
    result = evaluate(doc_of(make_record("a", 0), make_record("a", 1, status="error")))
    assert result.code == 1
    assert "1 run(s) errored and were not judged (first: task a run 1: provider:" in result.reasons[0]


def test_missing_runs_are_exit_1() -> None:
    header = {**make_header(k=2), "runsRequested": 4}
    result = evaluate(build_report(header, [make_record("a", 0), make_record("a", 1)]))
    assert result.reasons == ("2 of 4 requested runs have no record",)


def test_nothing_judged_is_exit_1() -> None:
    result = evaluate(doc_of(make_record("a", 0, status="error")))
    assert "no run was judged" in result.reasons


def test_replay_divergence_is_exit_2() -> None:
    result = evaluate(doc_of(make_record("a", 0), make_record("b", 0, status="error", error=DIVERGED)))
    assert result.code == 2
    assert result.reasons[0] == "1 run(s) diverged from the recording (replay divergence)"


def test_min_pass_rate_outside_unit_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="within \\[0, 1\\], got 1.5"):
        evaluate(doc_of(make_record("a", 0)), min_pass_rate=1.5)


def test_load_report_accepts_the_directory_or_the_file(tmp_path: Path) -> None:
    records = [make_record("a", 0)]
    write_report(tmp_path / "r", build_report(make_header(k=1), records), records)
    assert load_report(tmp_path / "r") == load_report(tmp_path / "r" / "report.json")


def test_load_report_refuses_a_newer_version(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(json.dumps({"schemaVersion": 9, "summary": {}, "tasks": []}))
    with pytest.raises(RecordVersionError, match="schemaVersion 9 is newer than this lab reads \\(1\\)"):
        load_report(tmp_path)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no report.json in this directory"), ("{not json", "not a JSON file"),
    ("[]", "not a report: expected a JSON object"), ('{"schemaVersion": 1}', "not a report")])
def test_load_report_names_the_problem(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "report.json").write_text(content)
    with pytest.raises(LabError, match=message):
        load_report(tmp_path)


def published(tmp_path: Path, *records: dict) -> Path:
    out = tmp_path / "reports" / "r"
    write_report(out, build_report(make_header(k=2), list(records)), list(records))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("records", "args", "code"), [
    ([make_record("a", 0), make_record("a", 1)], [], 0),
    ([make_record("a", 0), make_record("a", 1, status="fail")], [], 1),
    ([make_record("a", 0), make_record("a", 1, status="fail")], ["min_pass_rate=0.5", "allow_flaky=true"], 0),
    ([make_record("a", 0), make_record("a", 1, status="error", error=DIVERGED)], [], 2),
], ids=["pass", "fail", "flaky-allowed", "divergence"])
def test_lab_gate_command_exit_codes(tmp_path: Path, records: list[dict], args: list[str], code: int) -> None:
    report = published(tmp_path, *records)
    result = run_cmd(["lab", "gate", str(report), *args], tmp_path / "data")
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stdout.startswith("gate: ")


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), [
    ([], "expected one REPORT"), (["nowhere"], "nowhere: no such report file, directory or run id"),
    (["{report}", "min_rate=1"], "unknown option 'min_rate'"),
    (["{report}", "min_pass_rate=high"], "min_pass_rate: expected a number in [0, 1], got 'high'"),
    (["{report}", "allow_flaky=maybe"], "allow_flaky: expected true or false, got 'maybe'"),
])
def test_lab_gate_usage_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    report = published(tmp_path, make_record("a", 0))
    argv = [a.replace("{report}", str(report)) for a in args]
    result = run_cmd(["lab", "gate", *argv], tmp_path / "data")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    assert "Traceback" not in result.stderr
