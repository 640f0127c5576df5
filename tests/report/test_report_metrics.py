"""Every figure of a report (SPEC M1–M7, X2) from hand-built run records."""

from __future__ import annotations

import json

import pytest

from lab.report import build_report, render_markdown, run_json_line
from lab.report.stats import wilson_interval
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid


def task(doc: dict, task_id: str) -> dict:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


def test_success_rate_counts_judged_runs_only_with_wilson() -> None:
    records = [make_record("a", 0), make_record("a", 1, status="fail"),
               make_record("a", 2, status="budget_exceeded"), make_record("a", 3, status="error")]
    doc = build_report(make_header(k=4), records)
    a = task(doc, "a")
    assert (a["runs"], a["judged"], a["passes"], a["errors"]) == (4, 3, 1, 1)
    assert a["successRate"] == pytest.approx(1 / 3)
    assert a["wilson95"] == list(wilson_interval(1, 3))
    assert doc["summary"]["successRate"] == pytest.approx(1 / 3)


def test_no_judged_run_has_null_rates() -> None:
    doc = build_report(make_header(k=1), [make_record("a", 0, status="error")])
    assert task(doc, "a")["successRate"] is None and task(doc, "a")["wilson95"] is None
    assert task(doc, "a")["passAtK"] is None
    assert doc["summary"]["passHatK"] is None
    assert "measured" not in doc


def test_pass_at_k_pass_hat_k_and_suite_fraction() -> None:
    records = [make_record("all", 0), make_record("all", 1),
               make_record("some", 0), make_record("some", 1, status="fail"),
               make_record("none", 0, status="fail"), make_record("none", 1, status="fail")]
    doc = build_report(make_header(k=2), records)
    assert [(task(doc, t)["passAtK"], task(doc, t)["passHatK"]) for t in ("all", "some", "none")] == [
        (1.0, 1.0), (1.0, 0.0), (0.0, 0.0)]
    assert doc["summary"]["passAtK"] == pytest.approx(2 / 3)
    assert doc["summary"]["passHatK"] == pytest.approx(1 / 3)


def test_flaky_is_pass_at_k_without_pass_hat_k() -> None:
    records = [make_record("some", 0), make_record("some", 1, status="fail"),
               make_record("none", 0, status="fail"), make_record("all", 0)]
    doc = build_report(make_header(k=2), records)
    assert doc["summary"]["flakyTasks"] == ["some"]
    assert [task(doc, t)["flaky"] for t in ("all", "none", "some")] == [False, False, True]
    assert "Flaky tasks (pass@k yes, pass^k no): some." in render_markdown(doc)


@pytest.mark.parametrize(("judged", "low"), [(4, True), (5, False)])
def test_low_power_below_five_judged_runs(judged: int, low: bool) -> None:
    records = [make_record("a", i) for i in range(judged)] + [make_record("a", judged, status="error")]
    doc = build_report(make_header(k=judged + 1), records)
    assert task(doc, "a")["lowPower"] is low
    assert doc["summary"]["lowPower"] is low
    assert doc["summary"]["lowPowerTasks"] == (["a"] if low else [])
    assert ("Low power" in render_markdown(doc)) is low


def test_overall_power_differs_from_task_power() -> None:
    records = [make_record(t, i) for t in ("a", "b", "c") for i in range(2)]
    doc = build_report(make_header(k=2), records)
    assert doc["summary"]["lowPower"] is False
    assert doc["summary"]["lowPowerTasks"] == ["a", "b", "c"]


def test_usage_on_some_runs_only_omits_token_figures_and_marks_the_run() -> None:
    records = [make_record("a", 0), make_record("a", 1, tokens=None)]
    doc = build_report(make_header(k=2, rates=(1.0, 2.0)), records)
    measured = doc["measured"]
    assert measured["usageIncomplete"] is True
    assert measured["runsReportingUsage"] == 1
    assert measured["runsMissingUsage"] == [{"taskId": "a", "repetition": 1}]
    for key in ("inputTokens", "outputTokens", "tokensPerAttempt", "tokensPerSuccess"):
        assert key not in measured and key not in measured["tasks"][0]
    assert "estimated" not in doc
    run = doc["runs"][1]
    assert run["usageReported"] is False and "inputTokens" not in run
    text = render_markdown(doc)
    assert "Token figures omitted: 1 of 2 judged runs did not report usage (a r1)." in text
    assert "some judged runs did not report usage, and no price is ever guessed" in text


def test_errored_run_without_usage_does_not_hide_tokens() -> None:
    records = [make_record("a", 0), make_record("a", 1, status="error", tokens=None)]
    assert build_report(make_header(k=2), records)["measured"]["inputTokens"] == 1000


def test_tokens_per_success_spreads_failed_spend_over_successes() -> None:
    records = [make_record("a", 0, tokens=(1000, 200)), make_record("a", 1, status="fail", tokens=(3000, 600)),
               make_record("b", 0, status="budget_exceeded", tokens=(500, 100))]
    m = build_report(make_header(k=2), records)["measured"]
    assert (m["inputTokens"], m["outputTokens"]) == (4500, 900)
    assert m["tokensPerAttempt"] == pytest.approx(5400 / 3)
    assert m["tokensPerSuccess"] == pytest.approx(5400 / 1)
    assert [t["tokensPerSuccess"] for t in m["tasks"]] == [pytest.approx(4800.0), None]


def test_wall_time_median_sample_variance_and_time_per_success() -> None:
    records = [make_record("a", 0, wall_ms=1000), make_record("a", 1, wall_ms=2000),
               make_record("a", 2, status="fail", wall_ms=6000)]
    m = build_report(make_header(k=3), records)["measured"]
    assert m["wallMsMedian"] == 2000.0
    assert m["wallMsVariance"] == pytest.approx(7_000_000.0)  # sample variance (n - 1)
    assert m["wallMsPerSuccess"] == pytest.approx(9000 / 2)


def test_single_run_has_no_variance_and_no_success_has_null_per_success() -> None:
    m = build_report(make_header(k=1), [make_record("a", 0, status="fail")])["measured"]
    assert m["wallMsVariance"] is None
    assert m["wallMsPerSuccess"] is None and m["tokensPerSuccess"] is None


def test_cached_partial_run_is_left_out_of_the_ratio() -> None:
    records = [make_record("a", 0, tokens=(1000, 10), cached=400),
               make_record("a", 1, tokens=(3000, 10), cached_partial=True),
               make_record("b", 0, tokens=(1000, 10), cached=100)]
    doc = build_report(make_header(k=2), records)
    assert doc["summary"]["cachedInput"] == {"tokens": 500, "inputTokens": 2000, "ratio": 0.25,
                                             "runsReporting": 2, "runsPartial": 1, "runsJudged": 3}
    assert task(doc, "a")["cachedInputRatio"] == pytest.approx(0.4)
    assert task(doc, "b")["cachedInputRatio"] == pytest.approx(0.1)
    partial = doc["runs"][1]
    assert partial["cachedPartial"] is True and "cachedInputTokens" not in partial
    assert doc["runs"][0]["cachedInputTokens"] == 400
    assert "left out of the ratio" in render_markdown(doc)


def test_cached_input_unreported_is_null_not_zero() -> None:
    doc = build_report(make_header(k=1), [make_record("a", 0)])
    cached = doc["summary"]["cachedInput"]
    assert (cached["tokens"], cached["inputTokens"], cached["ratio"], cached["runsReporting"]) == (None, None, None, 0)
    assert task(doc, "a")["cachedInputRatio"] is None


def test_both_rates_give_an_estimate_apart_from_measured() -> None:
    records = [make_record("a", 0, tokens=(1_000_000, 100_000)), make_record("a", 1, status="fail",
                                                                             tokens=(1_000_000, 100_000))]
    doc = build_report(make_header(k=2, rates=(2.0, 8.0)), records)
    e = doc["estimated"]
    assert e["costUsd"] == pytest.approx(2 * (2.0 + 0.8))
    assert e["costUsdPerAttempt"] == pytest.approx(2.8)
    assert e["costUsdPerSuccess"] == pytest.approx(5.6)
    assert e["rates"] == {"inputUsdPerMTok": 2.0, "outputUsdPerMTok": 8.0}
    assert not any("cost" in key.lower() for key in doc["measured"])
    text = render_markdown(doc)
    measured_part, estimated_part = text.split("\n## Estimated\n")
    assert "5.6000" in estimated_part and "cost" not in measured_part.split("\n## Measured\n")[1]


@pytest.mark.parametrize("rates", [(None, None), (2.0, None), (None, 8.0)])
def test_missing_rate_gives_no_estimate(rates: tuple[float | None, float | None]) -> None:
    doc = build_report(make_header(k=1, rates=rates), [make_record("a", 0)])
    assert "estimated" not in doc
    assert "both rates.input and rates.output" in render_markdown(doc)


def test_variable_verifiers_and_per_verifier_counts() -> None:
    records = [make_record("a", 0, verdicts=[("tests", "pass"), ("scope", "pass")]),
               make_record("a", 1, status="fail", verdicts=[("tests", "fail"), ("scope", "pass")]),
               make_record("a", 2, status="error")]
    rep = build_report(make_header(k=3), records)["repetition"]
    assert rep["variableVerifiers"] == [{"taskId": "a", "verifierId": "tests"}]
    assert rep["verifiers"] == [{"taskId": "a", "verifierId": "scope", "passed": 2, "assessed": 2},
                                {"taskId": "a", "verifierId": "tests", "passed": 1, "assessed": 2}]
    assert rep["variableTasks"] == ["a"]


def test_score_statistics_use_verifier_weights() -> None:
    records = [make_record("a", 0, verdicts=[("tests", "pass", 3), ("style", "pass", 1)]),
               make_record("a", 1, status="fail", verdicts=[("tests", "pass", 3), ("style", "fail", 1)]),
               make_record("a", 2, status="fail", verdicts=[("tests", "fail", 3), ("style", "pass", 1)])]
    rep = build_report(make_header(k=3), records)["repetition"]
    assert (rep["scoreMin"], rep["scoreMax"]) == (0.25, 1.0)
    assert rep["scoreMean"] == pytest.approx((1.0 + 0.75 + 0.25) / 3)


def test_score_statistics_are_null_when_nothing_was_assessed() -> None:
    rep = build_report(make_header(k=1), [make_record("a", 0, status="error")])["repetition"]
    assert (rep["scoreMean"], rep["scoreMin"], rep["scoreMax"]) == (None, None, None)


def test_repetition_counts_against_the_plan() -> None:
    records = [make_record("a", 0), make_record("a", 1, status="fail"), make_record("b", 0, status="error")]
    doc = build_report(make_header(k=2), records, planned_tasks=["a", "b", "c"])
    rep = doc["repetition"]
    assert {k: rep[k] for k in ("requested", "completed", "assessed", "invalid", "resolved", "allResolved")} == {
        "requested": 6, "completed": 3, "assessed": 2, "invalid": 1, "resolved": 1, "allResolved": False}
    assert rep["tasks"] == [{"taskId": "a", "passed": 1, "assessed": 2}, {"taskId": "b", "passed": 0, "assessed": 0},
                            {"taskId": "c", "passed": 0, "assessed": 0}]
    assert task(doc, "c")["runs"] == 0


def test_all_resolved_when_every_requested_run_passed() -> None:
    records = [make_record(t, i) for t in ("a", "b") for i in range(2)]
    assert build_report(make_header(k=2), records)["repetition"]["allResolved"] is True


def test_false_positives_and_negatives_per_task_and_overall() -> None:
    records = [make_record("a", 0, status="fail", claim="success"),
               make_record("a", 1, status="budget_exceeded", claim="success"),
               make_record("b", 0, status="pass", claim="gave_up"),
               make_record("b", 1, status="pass", claim="success"),
               make_record("b", 2, status="error", claim="success")]
    doc = build_report(make_header(k=3), records)
    assert (task(doc, "a")["falsePositives"], task(doc, "a")["falseNegatives"]) == (2, 0)
    assert (task(doc, "b")["falsePositives"], task(doc, "b")["falseNegatives"]) == (0, 1)
    assert (doc["summary"]["falsePositives"], doc["summary"]["falseNegatives"]) == (2, 1)


def test_replay_divergence_is_counted_and_noted() -> None:
    error = {"kind": "replay_divergence", "message": "call 0: request differs at messages[1].content"}
    doc = build_report(make_header(mode="replay", k=1), [make_record("a", 0, status="error", error=error)])
    assert doc["summary"]["divergences"] == 1
    assert "says nothing about model quality" in doc["header"]["note"]
    assert "> Replay measures the harness alone" in render_markdown(doc)


def test_run_json_line_is_one_compact_parseable_line() -> None:
    line = run_json_line(make_record("a", 1, status="fail", cached=50))
    assert "\n" not in line and ", " not in line
    data = json.loads(line)
    assert list(data)[0] == "schemaVersion"
    assert {k: data[k] for k in ("type", "suiteId", "taskId", "repetition", "status", "cachedInputTokens")} == {
        "type": "run", "suiteId": "demo", "taskId": "a", "repetition": 1, "status": "fail",
        "cachedInputTokens": 50}
    assert data["verifiers"] == {"tests": "fail"}


def test_requested_runs_come_from_the_header_when_known() -> None:
    header = {**make_header(k=2), "runsRequested": 6, "tasksRequested": 3, "voided": True}
    doc = build_report(header, [make_record("a", 0), make_record("a", 1, status="error")])
    assert (doc["repetition"]["requested"], doc["repetition"]["completed"]) == (6, 2)
    assert "Incomplete: 2 of 6 requested runs have a record (the eval was voided" in render_markdown(doc)
    assert_valid("report", doc, "report.json")
