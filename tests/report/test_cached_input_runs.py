"""tasks[].cachedInputRuns: how many judged runs reported cached input, beside cachedInputRatio (SPEC M5)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.report import build_report
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid


def task(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


def test_cached_input_runs_counts_the_judged_runs_that_reported_it() -> None:
    records = [make_record("a", 0, tokens=(1000, 10), cached=400),
               make_record("a", 1, tokens=(3000, 10), cached_partial=True),  # partial: left out
               make_record("a", 2, tokens=(1000, 10)),                        # not reported
               make_record("a", 3, status="error", tokens=(1000, 10), cached=900),  # not judged
               make_record("b", 0, tokens=(1000, 10), cached=100),
               make_record("b", 1, tokens=(1000, 10), cached=0)]
    doc = build_report(make_header(k=4), records)
    assert_valid("report", doc, "report")
    assert (task(doc, "a")["cachedInputRuns"], task(doc, "a")["cachedInputRatio"]) == (1, pytest.approx(0.4))
    assert (task(doc, "b")["cachedInputRuns"], task(doc, "b")["cachedInputRatio"]) == (2, pytest.approx(0.05))


def test_no_run_reporting_gives_zero_runs_and_a_null_ratio() -> None:
    doc = build_report(make_header(k=1), [make_record("a", 0, tokens=(1000, 10))])
    assert (task(doc, "a")["cachedInputRuns"], task(doc, "a")["cachedInputRatio"]) == (0, None)


@given(st.lists(st.one_of(st.none(), st.integers(0, 1000)), min_size=1, max_size=8))
def test_task_counts_add_up_to_the_summary(cached: list[int | None]) -> None:
    records = [make_record(f"t{i % 3}", i // 3, tokens=(1000, 10), cached=c) for i, c in enumerate(cached)]
    doc = build_report(make_header(k=3), records)
    assert sum(t["cachedInputRuns"] for t in doc["tasks"]) == doc["summary"]["cachedInput"]["runsReporting"]
    assert all((t["cachedInputRuns"] == 0) == (t["cachedInputRatio"] is None) for t in doc["tasks"])
