"""File names an agent chose (and messages servers and verifiers send) reach report.md, the console
summary and the progress lines with their control characters escaped, never as raw terminal
escape sequences (issue 28: ``report.md`` carried ``ESC ] 0 ; … BEL`` from an agent's file name)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.console import visible
from lab.execute.verifiers import run_verifiers
from lab.providers.faults import one_line as message_line
from lab.report import build_report
from lab.report.closing import one_line as console_line
from lab.report.closing import summarise
from lab.report.markdown import render_markdown
from lab.sandbox.process import minimal_env
from lab.sandbox.workspace import snapshot
from tests.helpers.reports import make_header, make_records, write_report_dir

HOSTILE_NAME = "\x1b]0;owned\x07\x1b[2J\x1b[1A\u202etxt.exe\x9b31m.txt"
"""Retitles the terminal, clears it, moves up a line, reverses the text and opens a C1 CSI."""

UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What must not appear in report.md or the console text (tab and newline are layout)."""


def _publish(data: Path, detail: str, message: str) -> Path:
    records = make_records({"a": "FE"})
    records[0]["verifiers"][0]["detail"] = detail
    records[1]["error"] = {"kind": "harness", "message": message}
    return write_report_dir(data, build_report(make_header(k=2), records), records)


def test_an_agent_file_name_with_escape_sequences_is_escaped_in_the_verifier_detail(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    baseline = snapshot(workspace)
    (workspace / HOSTILE_NAME).write_text("x")
    [result] = run_verifiers([{"id": "v", "kind": "tree-diff-within", "allowed": []}],
                             workspace=workspace, baseline=baseline, events=None,
                             env=minimal_env(workspace))
    assert result.status == "fail"
    assert UNSHOWABLE.search(result.detail) is None, repr(result.detail)
    assert "\\x1b]0;owned\\x07\\x1b[2J" in result.detail and "\\u202etxt.exe" in result.detail


def test_report_md_and_the_console_summary_escape_control_characters(tmp_path: Path) -> None:
    report_dir = _publish(tmp_path / "data", f"1 path(s) changed outside allowed: {HOSTILE_NAME}",
                          f"cannot remove {HOSTILE_NAME}")
    markdown = (report_dir / "report.md").read_text(encoding="utf-8")
    assert UNSHOWABLE.search(markdown) is None
    assert visible(HOSTILE_NAME) in markdown
    _, text = summarise(report_dir)
    assert UNSHOWABLE.search(text) is None
    assert f"cannot remove {visible(HOSTILE_NAME)}" in text


def test_visible_keeps_printable_text_as_is() -> None:
    assert visible("naïve 文件 ✓ | ok") == "naïve 文件 ✓ | ok"
    assert visible("\x1b[0m\x00\x7f\x85\u2066") == "\\x1b[0m\\x00\\x7f\\x85\\u2066"


_HOSTILE = st.text(st.sampled_from(["\x1b", "\x07", "\x00", "\x7f", "\x9b", "\x85", "\u202e", "\u2067",
                                    "\u200f", "[", "]", ";", "a", "é", " ", "\n", "|"]), max_size=40)


@settings(max_examples=30, deadline=None)
@given(name=_HOSTILE)
def test_no_control_character_reaches_report_md_or_the_console(name: str) -> None:
    """The kind: any mix of C0/C1 controls, DEL and bidi overrides in a name, through the
    report's Markdown, a console line and a verifier or provider message."""
    records = make_records({"a": "FE"})
    records[0]["verifiers"][0]["detail"] = f"changed: {name}"
    records[0]["verifiers"][0]["id"] = f"v{name}"
    records[1]["error"] = {"kind": "harness", "message": f"cannot read {name}"}
    markdown = render_markdown(build_report(make_header(k=2), records), records)
    assert UNSHOWABLE.search(markdown) is None
    assert UNSHOWABLE.search(console_line(f"error: {name}")) is None
    assert UNSHOWABLE.search(message_line(name)) is None
    assert visible(name).isprintable()
