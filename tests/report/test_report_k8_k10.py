"""Reports state pass^k with its interval (K10), the detectable change (K8) and the whole spend with compaction."""

from __future__ import annotations

import math

import pytest

from lab.compare.power import aggregate_detectable_difference, task_detectable_difference
from lab.report.markdown import render_markdown
from lab.report.stats import pass_hat_k, pass_hat_k_interval
from tests.helpers.reports import make_report
from tests.helpers.schemas import assert_valid


def proportion_confint(count: int, nobs: int, **kwargs: object) -> tuple[float, float]:
    """statsmodels' interval, imported by the tests that compare with it (with scipy and pandas, a second)."""
    from statsmodels.stats.proportion import proportion_confint as reference

    low, high = reference(count, nobs, **kwargs)
    return float(low), float(high)


@pytest.mark.parametrize(("n", "c", "k"), [(10, 10, 10), (10, 0, 5), (20, 17, 5), (5, 3, 1)])
def test_pass_hat_k_interval_is_the_wilson_interval_to_the_kth_power(n: int, c: int, k: int) -> None:
    low, high = proportion_confint(c, n, alpha=0.05, method="wilson")
    assert pass_hat_k_interval(n, c, k) == pytest.approx((max(0.0, float(low)) ** k, min(1.0, float(high)) ** k),
                                                         abs=1e-12)


def test_pass_hat_k_interval_covers_exactly_when_the_wilson_interval_does() -> None:
    # p -> p^k is increasing, so the coverage of p^k is Wilson's coverage of p, draw by draw
    # (Wilson's own coverage oscillates around 95 %, lower near 0 and 1 at small n)
    import numpy as np

    from lab.report.stats import wilson_interval

    rng = np.random.default_rng(3)
    for p in (0.5, 0.8, 0.95):
        for c in rng.binomial(20, p, size=300):
            lo, hi = pass_hat_k_interval(20, int(c), 5)
            wl, wh = wilson_interval(int(c), 20)
            assert (lo <= p ** 5 <= hi) == (wl <= p <= wh)


def test_report_states_k10_and_k8() -> None:
    tasks = {"steady": "P" * 10, "half": "PPPPPFFFFF", "none": "F" * 10, "mostly": "PPPPPPPPFF"}
    doc = make_report(tasks)
    assert_valid("report", doc, "report")
    by_id = {t["taskId"]: t for t in doc["tasks"]}
    assert by_id["steady"]["passHatK95"] == pytest.approx(list(pass_hat_k_interval(10, 10, 10)))
    assert by_id["half"]["passHatK"] == pass_hat_k(10, 5, 10) == 0.0
    s = doc["summary"]
    low, high = proportion_confint(1, 4, method="wilson")  # one task of four passed every run
    assert s["passHatK"] == 0.25 and s["passHatKWilson95"] == pytest.approx([float(low), float(high)])
    rates = [by_id[t]["successRate"] for t in sorted(tasks)]
    d = s["detectable"]
    assert d["aggregate"] == pytest.approx(aggregate_detectable_difference(rates, [10] * 4, [10] * 4), abs=1e-4)
    per_task = sorted(task_detectable_difference(r, 10, 10, alpha=0.05 / 4) for r in rates)
    median = (per_task[1] + per_task[2]) / 2
    assert d["perTaskMedian"] == (None if math.isinf(median) else pytest.approx(median, abs=1e-4))
    assert d["perTaskAlpha"] == 0.0125
    text = render_markdown(doc)
    assert "(95% Wilson over tasks)" in text and "detectable change (80% power, α=0.05)" in text
    assert "suite mean: ±" in text


def test_a_replay_report_states_no_interval_and_no_power() -> None:
    doc = make_report({"a": "PPFPP"}, mode="replay")
    assert_valid("report", doc, "report")
    assert doc["tasks"][0]["passHatK95"] is None and doc["summary"]["passHatKWilson95"] is None
    assert "detectable" not in doc["summary"] and "detectable change" not in render_markdown(doc)


def test_total_tokens_per_success_counts_the_compaction_calls() -> None:
    doc = make_report({"a": "PPFF"}, tokens=(1000, 200), compaction_tokens=(300, 50))
    assert_valid("report", doc, "report")
    m = doc["measured"]
    assert (m["tokensPerSuccess"], m["compactionTokens"], m["totalTokensPerSuccess"]) == (2400, 1400, 3100)
    assert all(r["compactionTokens"] == 350 for r in doc["runs"])


def test_compaction_calls_without_usage_leave_the_total_unknown() -> None:
    from lab.report import build_report
    from tests.helpers.reports import make_header, make_records

    records = make_records({"a": "PP"}, compaction=(10, 5))
    records[1]["compactionUsage"] = None  # a compaction call was made but its usage was not reported
    doc = build_report(make_header(k=2), records)
    assert "totalTokensPerSuccess" not in doc["measured"] and "compactionTokens" not in doc["runs"][1]
    assert doc["measured"]["tokensPerSuccess"] == 1200
