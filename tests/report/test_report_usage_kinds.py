"""Cache writes, provider-reported cost, per-class pricing and a cached share never above 100 %
(lab.report.metrics, lab.report.markdown)."""

from __future__ import annotations

from typing import Any

import pytest

from lab.report import build_report, render_markdown
from tests.helpers.reports import make_header, make_records
from tests.helpers.schemas import assert_valid


def records(**usage: Any) -> list[dict[str, Any]]:
    runs = make_records({"a": "PF"}, tokens=(20276, 862), cached=18901)
    runs[0]["usage"].update(usage)
    return runs


def report(runs: list[dict[str, Any]], **rates: Any) -> dict[str, Any]:
    doc = build_report(make_header(k=2, rates={"input": 3.0, "output": 15.0, **rates}), runs)
    assert_valid("report", doc)
    return doc


def test_cache_writes_and_provider_cost_are_measured_when_some_run_reports_them() -> None:
    doc = report(records(cacheWriteTokens=1367, providerCostUsd=0.0123))
    measured = doc["measured"]
    assert (measured["cacheWriteTokens"], measured["runsReportingCacheWrites"]) == (1367, 1)
    assert (measured["providerCostUsd"], measured["runsReportingProviderCost"]) == (0.0123, 1)
    text = render_markdown(doc)
    assert "| cache write tokens" in text and "| provider-reported cost (USD)" in text


def test_absent_figures_are_not_shown_and_never_zero() -> None:
    doc = report(records())
    assert "cacheWriteTokens" not in doc["measured"] and "providerCostUsd" not in doc["measured"]
    assert "cache write tokens" not in render_markdown(doc)


def test_each_class_is_priced_at_its_rate() -> None:
    runs = records(cacheWriteTokens=1367)[:1]
    runs[0]["status"] = "pass"
    priced = report(runs, cached_input=0.3, cache_write=3.75)["estimated"]
    plain = 20276 - 18901 - 1367
    assert priced["costUsd"] == pytest.approx((plain * 3.0 + 18901 * 0.3 + 1367 * 3.75 + 862 * 15.0) / 1e6)
    assert priced["rates"]["cachedInputUsdPerMTok"] == 0.3
    flat = report(runs)["estimated"]
    assert flat["costUsd"] == pytest.approx((20276 * 3.0 + 862 * 15.0) / 1e6)
    assert "cached input priced at the input rate" in render_markdown(report(runs))
    assert "cached input priced at its own rate" in render_markdown(report(runs, cached_input=0.3))


def test_an_old_record_with_cached_above_input_does_not_report_cached_input() -> None:
    runs = make_records({"a": "P"}, tokens=(8, 862), cached=18901)  # written before Anthropic semantics
    cached = report(runs)["summary"]["cachedInput"]
    assert (cached["ratio"], cached["runsReporting"]) == (None, 0)
    assert "236262" not in render_markdown(report(runs))
