"""Per-attempt evidence: attempts/<taskId>/<NNNN>/index.html and evaluation.json for every run of a report."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markupsafe import escape

from lab.errors import LabError
from lab.report import build_report, write_report, write_report_from_files
from lab.report.attempts import attempt_dir
from lab.report.evidence import HtmlRuns
from lab.report.lines import record_line
from tests.helpers.chromium import dump_dom
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid
from tests.report.test_report_stream import records_for, store, tree


class _Page(HTMLParser):
    """Links (with their text) and the text of table cells of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.cells: list[str] = []
        self._href: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((self._href, data))
            self._href = None
        if self._cell is not None:
            self._cell.append(data)


def page(text: str) -> _Page:
    parsed = _Page()
    parsed.feed(text)
    return parsed


def attempts(report: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree(report).items() if name.startswith("attempts/")}


def test_attempt_numbers_count_from_one_per_task() -> None:
    assert attempt_dir("fix-bug", 0) == "attempts/fix-bug/0001"
    assert attempt_dir("fix-bug", 41) == "attempts/fix-bug/0042"
    assert attempt_dir("fix-bug", 12344) == "attempts/fix-bug/12345"


def test_every_run_has_its_page_and_its_record_as_the_data_dir_holds_it(tmp_path: Path) -> None:
    records = records_for(21)
    records[3]["redactions"] = [{"file": "cassette", "field": "calls[1].exchange.events",
                                 "kind": "sk- API key (OpenAI/Anthropic style)"}]
    records[3]["finalMessage"] = "The deploy key is <secret:api-key>."
    paths = store(records, tmp_path / "runs")
    write_report_from_files(tmp_path / "r", make_header(k=6), paths)
    written = attempts(tmp_path / "r")
    assert len(written) == 2 * len(records)
    for path in paths:
        stored = json.loads(path.read_text(encoding="utf-8"))
        directory = tmp_path / "r" / attempt_dir(stored["taskId"], stored["repetition"])
        copied = json.loads((directory / "evaluation.json").read_text(encoding="utf-8"))
        assert copied == stored  # the record the data dir holds, nothing added or removed
        assert_valid("run-record", copied, str(directory / "evaluation.json"))
        html = (directory / "index.html").read_text(encoding="utf-8")
        assert f'id="run-{stored["taskId"]}-r{stored["repetition"]}"' in html
        assert f"<title>demo 1.0.0 — {stored['taskId']} attempt {stored['repetition'] + 1:04d} " in html
    runs = (tmp_path / "r" / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert sorted(runs) == sorted(v.decode() for k, v in written.items() if k.endswith("evaluation.json"))


def test_a_run_keeps_its_number_on_a_rebuild_and_when_k_is_raised(tmp_path: Path) -> None:
    records = [make_record(task, rep, status="pass" if (rep + len(task)) % 3 else "fail")
               for task in ("alpha", "beta", "gamma") for rep in range(5)]
    first_three = [r for r in records if r["repetition"] < 3]
    write_report_from_files(tmp_path / "k3", make_header(k=3), store(first_three, tmp_path / "runs3"))
    write_report_from_files(tmp_path / "k3-again", make_header(k=3), store(first_three, tmp_path / "runs3b"))
    write_report_from_files(tmp_path / "k5", make_header(k=5), store(records, tmp_path / "runs5"))
    k3, k5 = attempts(tmp_path / "k3"), attempts(tmp_path / "k5")
    assert attempts(tmp_path / "k3-again") == k3
    assert k3.items() <= k5.items()  # the same bytes under the same names
    assert sorted(k5.keys() - k3.keys()) == sorted(
        f"attempts/{task}/{n:04d}/{name}" for task in ("alpha", "beta", "gamma") for n in (4, 5)
        for name in ("evaluation.json", "index.html"))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60), st.integers(0, 20_000))
def test_any_final_message_reaches_the_attempt_page_escaped_and_the_record_unchanged(
        tmp_path: Path, message: str, repetition: int) -> None:
    record = make_record("fix-bug", repetition, status="fail", claim="success")
    record["finalMessage"] = message
    out = tmp_path / f"r{repetition}"
    out.mkdir()
    runs = HtmlRuns(1, "demo 1.0.0", list, out)  # the attempt files alone, without the rest of a report
    runs.add(record, record_line(record))
    runs.close()
    directory = out / attempt_dir("fix-bug", repetition)
    assert json.loads((directory / "evaluation.json").read_text(encoding="utf-8")) == record
    shown = (directory / "index.html").read_bytes().decode("utf-8")  # no newline translation
    assert f"<pre>{escape(message)}</pre>" in shown
    assert "\x00" not in shown.replace(message, "")  # no placeholder left behind
    shutil.rmtree(out)


def test_a_lone_surrogate_becomes_u_fffd_in_both_attempt_files_as_in_runs_jsonl(tmp_path: Path) -> None:
    record = make_record("fix-bug", 0)
    record["finalMessage"] = "half a pair: \ud83d."
    HtmlRuns(1, "demo 1.0.0", list, tmp_path).add(record)  # no runs.jsonl line given: dumps_line, not encodable
    directory = tmp_path / attempt_dir("fix-bug", 0)
    assert (directory / "evaluation.json").read_text(encoding="utf-8") == record_line(record)
    assert "<pre>half a pair: \ufffd.</pre>" in (directory / "index.html").read_text(encoding="utf-8")


def test_two_records_of_one_run_are_refused_in_one_line(tmp_path: Path) -> None:
    records = [make_record("fix-bug", 0, seed=1), make_record("fix-bug", 0, seed=2)]
    with pytest.raises(LabError, match=r"^two run records of task fix-bug repetition 0 in one report "
                                       r"\(seeds 1 and 2\): a report holds one record per run$"):
        write_report(tmp_path / "r", build_report(make_header(k=1), records), records)
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_link_from_index_html_opens_the_attempt_page_in_chromium(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        make_record("fix-bug", 0, verdicts=[("tests", "pass"), ("scope", "pass")]),
        make_record("fix-bug", 1, status="fail", claim="success", verdicts=[("tests", "fail"), ("scope", "pass")]),
        make_record("rename", 0, status="error", tokens=None,
                    error={"kind": "verifier", "message": "verifier tests: <cannot start> & exit 127"}),
    ]
    write_report_from_files(tmp_path / "r", make_header(k=2), store(records, tmp_path / "runs"))
    index = page(dump_dom((tmp_path / "r" / "index.html").as_uri()))
    pages = {text: href for href, text in index.links if href.endswith("/index.html")}
    assert pages == {"attempts/fix-bug/0001/": "attempts/fix-bug/0001/index.html",
                     "attempts/fix-bug/0002/": "attempts/fix-bug/0002/index.html",
                     "attempts/rename/0001/": "attempts/rename/0001/index.html"}

    failed = tmp_path / "r" / pages["attempts/fix-bug/0002/"]
    dom = dump_dom(failed.as_uri())
    shown = page(dom)
    assert "<title>demo 1.0.0 — fix-bug attempt 0002 (r1) — fail</title>" in dom
    facts = dict(zip(shown.cells[0::2], shown.cells[1::2], strict=False))
    assert facts["status"] == "fail" and facts["claim"] == "success"
    verifier_rows = [shown.cells[i:i + 6] for i, cell in enumerate(shown.cells) if cell in ("tests", "scope")]
    assert [(row[0], row[3]) for row in verifier_rows] == [("tests", "fail"), ("scope", "pass")]
    assert "AssertionError: tests failed" in dom  # the failed verifier's stderr tail
    assert "read_file" in shown.cells  # the event log
    back = dict((text, href) for href, text in shown.links)
    assert back["report"] == "../../../index.html" and back["fix-bug"] == "../../../index.html#task-fix-bug"
    assert (failed.parent / back["evaluation.json"]).is_file()

    errored = dump_dom((tmp_path / "r" / pages["attempts/rename/0001/"]).as_uri(), tmp_path)
    assert "Error — verifier: verifier tests: &lt;cannot start&gt; &amp; exit 127" in errored
