"""summarise_records reads runs.jsonl as JSON Lines: a record holding U+2028 or U+0085 stays one record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.report.summary import summarise_records
from tests.helpers.records import make_record


@pytest.mark.parametrize("breaker", ["\u2028", "\u2029", "\x85", "\r", "\x0b", "\x1c"])
def test_a_line_break_inside_a_record_does_not_split_it(tmp_path: Path, breaker: str) -> None:
    records = [make_record("task-a", 0), make_record("task-a", 1)]
    records[0]["finalMessage"] = f"done{breaker}really"
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    summary = summarise_records(runs)
    assert [a.attempt for a in summary.attempts] == [1, 2]
    assert summary.attempts[0].record["finalMessage"] == f"done{breaker}really"
