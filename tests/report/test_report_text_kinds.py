"""Every JSON Lines file the lab writes keeps every line-break character, and unencodable text
never crashes a writer (lab.report, lab.files, lab.export.bundle)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.execute.events import EventLog
from lab.export.bundle import read_bundle
from lab.files import dumps_json, split_lines
from lab.report import build_report
from tests.helpers.reports import make_header, make_records, write_report_dir

BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
_TEXT = st.lists(st.sampled_from([*BREAKS, "x", "é", " "]), max_size=20).map("".join)


def publish(data: Path, text: str) -> Path:
    header = make_header(k=2)
    records = make_records({"a": "PF"})
    records[0]["finalMessage"] = text
    records[1]["verifiers"][0]["detail"] = text
    return write_report_dir(data, build_report(header, records), records)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_every_line_break_round_trips_through_runs_events_and_export(tmp_path: Path, text: str) -> None:
    report_dir = publish(tmp_path / f"d{abs(hash(text))}", text)
    runs = [json.loads(line) for line in split_lines((report_dir / "runs.jsonl").read_text(encoding="utf-8"))]
    assert [r["finalMessage"] for r in runs if r["repetition"] == 0] == [text]
    events = split_lines((report_dir / "events.jsonl").read_text(encoding="utf-8"))
    assert all(json.loads(line) for line in events)
    bundle = read_bundle(report_dir)
    assert bundle["runs"][1]["verifiers"][0]["detail"] == text


def test_export_of_a_run_whose_verifier_output_held_u2028_and_u0085(tmp_path: Path) -> None:
    report_dir = publish(tmp_path, "line one\u2028line two\x85three")
    assert read_bundle(report_dir)["runs"][1]["verifiers"][0]["detail"] == "line one\u2028line two\x85three"


def test_a_lone_surrogate_is_written_as_u_fffd(tmp_path: Path) -> None:
    report_dir = publish(tmp_path, "DONE: \udc00 written")
    runs = [json.loads(line) for line in split_lines((report_dir / "runs.jsonl").read_text(encoding="utf-8"))]
    assert runs[0]["finalMessage"] == "DONE: \ufffd written"
    assert "\ufffd" in (report_dir / "report.md").read_text(encoding="utf-8") + (
        report_dir / "index.html").read_text(encoding="utf-8") + (report_dir / "junit.xml").read_text(encoding="utf-8")
    assert dumps_json({"k\udc00": "v\ud800"}) == '{\n  "k\ufffd": "v\ufffd"\n}\n'


def test_lifecycle_events_with_a_surrogate_are_written(tmp_path: Path) -> None:
    log = EventLog({"suiteId": "s"}, path=tmp_path / "events.jsonl", clock=lambda: "2026-01-01T00:00:00.000Z")
    log.emit("run_finished", message="bad \udc00")
    assert json.loads(split_lines((tmp_path / "events.jsonl").read_text(encoding="utf-8"))[0])["message"] == "bad \ufffd"


@given(st.text(alphabet=st.sampled_from(["a", "\udc00", "\ud800", "é", "\u2028"]), max_size=12))
def test_any_unencodable_text_is_written(text: str) -> None:
    written = dumps_json({"finalMessage": text}).encode("utf-8")  # never raises
    assert json.loads(written)["finalMessage"] == text.replace("\udc00", "\ufffd").replace("\ud800", "\ufffd")
