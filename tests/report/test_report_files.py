"""Every report file (SPEC M8): written whole, valid, self-contained, order-independent."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lab.report import REPORT_FILES, build_report, render_files, run_anchor, write_report
from lab.report.closing import summarise
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid


def mixed_records() -> list[dict]:
    """Pass, fail, flaky, budget, errored and usage-less runs over four tasks."""
    return [
        make_record("steady", 0, cached=300), make_record("steady", 1, cached=250),
        make_record("wobbly", 0, verdicts=[("tests", "pass"), ("scope", "pass")]),
        make_record("wobbly", 1, status="fail", claim="success", verdicts=[("tests", "fail"), ("scope", "pass")]),
        make_record("broken", 0, status="budget_exceeded"), make_record("broken", 1, status="fail", tokens=None),
        make_record("down", 0, status="error", tokens=None),
        make_record("down", 1, status="error", tokens=None,
                    error={"kind": "verifier", "message": "verifier tests: <cannot start> & \x1b[31mred\x1b[0m"}),
    ]


def build(records: list[dict], **header: object) -> dict:
    return build_report(make_header(**header), records)  # type: ignore[arg-type]


@pytest.fixture
def report_dir(tmp_path: Path) -> Path:
    records = mixed_records()
    out = tmp_path / "reports" / "demo.run"
    write_report(out, build(records, rates=(1.0, 4.0)), records)
    return out


def test_every_file_is_published(report_dir: Path) -> None:
    assert sorted(p.name for p in report_dir.iterdir()) == sorted([*REPORT_FILES, "attempts"])
    assert not [p for p in report_dir.parent.iterdir() if p.name.startswith(".")]


def test_report_json_validates_against_the_schema(report_dir: Path) -> None:
    assert_valid("report", json.loads((report_dir / "report.json").read_text()), "report.json")


@pytest.mark.parametrize("records", [
    [], [make_record("a", 0, status="error")], [make_record("a", 0, tokens=None)],
    [make_record("a", 0, cached_partial=True), make_record("a", 1, status="fail", cached=5)],
], ids=["empty", "all-errored", "no-usage", "cached"])
def test_edge_case_reports_validate(records: list[dict]) -> None:
    assert_valid("report", build(records, rates=(1.0, 1.0)), "report.json")


def test_schema_rejects_a_zero_standing_in_for_unknown_tokens() -> None:
    doc = build([make_record("a", 0, tokens=None)])
    doc["measured"]["inputTokens"] = 0
    with pytest.raises(AssertionError, match="measured"):
        assert_valid("report", doc, "report.json")


def test_runs_jsonl_holds_every_record_in_report_order(report_dir: Path) -> None:
    lines = [json.loads(line) for line in (report_dir / "runs.jsonl").read_text().splitlines()]
    assert [(r["taskId"], r["repetition"]) for r in lines] == sorted((r["taskId"], r["repetition"])
                                                                     for r in mixed_records())
    for n, line in enumerate(lines):
        assert_valid("run-record", line, f"runs.jsonl:{n + 1}")


def test_events_jsonl_is_derived_from_the_records_when_no_stream_is_given(report_dir: Path) -> None:
    events = [json.loads(line) for line in (report_dir / "events.jsonl").read_text().splitlines()]
    assert len(events) == len(mixed_records())
    assert all(e["schema"] == "lab.event.v1" and e["event"] == "run_finished" for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert {"suiteId", "taskId", "repetition", "status", "ts"} <= set(events[0])


def test_events_jsonl_writes_the_given_stream_verbatim_in_order(tmp_path: Path) -> None:
    records = [make_record("a", 0)]
    stream = [{"schema": "lab.event.v1", "event": "eval_started", "ts": "2030-01-01T00:00:01.000Z"},
              {"schema": "lab.event.v1", "event": "run_started", "ts": "2030-01-01T00:00:00.000Z"}]
    write_report(tmp_path / "r", build(records), records, events=stream)
    lines = (tmp_path / "r" / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["eval_started", "run_started"]


def test_junit_has_one_testcase_per_task_with_failures_errors_and_flaky(report_dir: Path) -> None:
    root = ET.parse(report_dir / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert sorted(cases) == ["broken", "down", "steady", "wobbly"]
    assert cases["steady"].find("failure") is None and cases["steady"].find("error") is None
    assert cases["broken"].find("failure").get("type") == "failed"  # type: ignore[union-attr]
    flaky = cases["wobbly"].find("failure")
    assert flaky is not None and flaky.get("message", "").startswith("flaky: 1/2")
    assert {p.get("name"): p.get("value") for p in cases["wobbly"].iter("property")}["flaky"] == "true"
    error = cases["down"].find("error")
    assert error is not None and cases["down"].find("failure") is None
    assert "<cannot start> &" in (error.text or "") and "\x1b" not in (error.text or "")
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "1")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.tags: set[str] = set()
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name == "href" and value:
                self.hrefs.append(value)
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)


def parse_page(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_index_html_reaches_every_run_from_the_task_table(report_dir: Path) -> None:
    page = parse_page(report_dir / "index.html")
    anchors = {run_anchor(r["taskId"], r["repetition"]) for r in mixed_records()}
    assert anchors <= page.ids
    assert anchors <= {h.removeprefix("#") for h in page.hrefs}
    assert {f"task-{t}" for t in ("steady", "wobbly", "broken", "down")} <= page.ids
    assert all(h.removeprefix("#") in page.ids for h in page.hrefs if h.startswith("#"))
    # every other link is a run's attempt page or its record, inside the report directory
    assert sorted(h for h in page.hrefs if not h.startswith("#")) == sorted(
        f"attempts/{r['taskId']}/{r['repetition'] + 1:04d}/{name}" for r in mixed_records()
        for name in ("index.html", "evaluation.json"))
    assert all((report_dir / h).is_file() for h in page.hrefs if not h.startswith("#"))


def test_index_html_is_self_contained(report_dir: Path) -> None:
    page = parse_page(report_dir / "index.html")
    assert [h for h in page.external if not h.startswith("attempts/") or "//" in h or ".." in h] == []
    assert "script" not in page.tags and "link" not in page.tags
    assert "svg" in page.tags and "style" in page.tags


def test_index_html_shows_evidence_escaped(report_dir: Path) -> None:
    text = (report_dir / "index.html").read_text()
    for task_id in ("steady", "wobbly", "broken", "down"):
        assert task_id in text
    assert "&lt;cannot start&gt; &amp;" in text and "<cannot start>" not in text
    assert "AssertionError: tests failed" in text  # stderr tail of a failed verifier
    assert "usage_unreported" in text  # the event log
    assert "Replay measures" not in text


def test_replay_page_repeats_the_replay_sentence(tmp_path: Path) -> None:
    records = [make_record("a", 0)]
    write_report(tmp_path / "r", build(records, mode="replay"), records)
    for name in ("index.html", "report.md"):
        assert "a replay says nothing about model quality" in (tmp_path / "r" / name).read_text()


@pytest.mark.parametrize("seed", range(5))
def test_files_are_identical_whatever_the_record_order(seed: int) -> None:
    records = mixed_records()
    expected = render_files(build(records, rates=(1.0, 4.0)), records)
    shuffled = [json.loads(json.dumps(r)) for r in records]
    random.Random(seed).shuffle(shuffled)
    assert render_files(build(shuffled, rates=(1.0, 4.0)), shuffled) == expected


def test_markdown_keeps_measured_and_estimated_tables_apart(report_dir: Path) -> None:
    text = (report_dir / "report.md").read_text()
    assert "## Measured" in text
    measured = text.split("\n## Measured\n")[1].split("\n## Estimated\n")[0]
    assert "USD" not in measured
    assert "Token figures omitted" in measured
    assert "some judged runs did not report usage" in text.split("\n## Estimated\n")[1]


def test_summary_warns_of_low_power_and_omitted_tokens(report_dir: Path) -> None:
    code, text = summarise(report_dir)
    assert code == 1  # errored runs
    assert "low power: 4 of 4 tasks have fewer than 5 judged runs" in text
    assert "token figures omitted: 1 of 6 judged runs did not report usage" in text
    assert f"html: {report_dir / 'index.html'}" in text


def test_rewriting_a_report_replaces_it_whole(tmp_path: Path) -> None:
    out = tmp_path / "r"
    first = [make_record("a", 0)]
    write_report(out, build(first), first)
    second = [make_record("b", 0)]
    write_report(out, build(second), second)
    assert "b" in {t["taskId"] for t in json.loads((out / "report.json").read_text())["tasks"]}
    assert "run-a-r0" not in (out / "index.html").read_text()


def test_written_files_equal_the_rendered_files(tmp_path: Path) -> None:
    records = mixed_records()
    doc = build(records, rates=(1.0, 4.0))
    write_report(tmp_path / "r", doc, records)
    on_disk = {name: (tmp_path / "r" / name).read_text(encoding="utf-8") for name in REPORT_FILES}
    assert on_disk == render_files(doc, records)
