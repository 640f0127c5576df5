"""Below the power threshold, and in replay, a comparison claims no direction (SPEC K1, M3)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lab.compare.admit import admit
from lab.compare.markdown import render_comparison_markdown
from lab.compare.verdicts import compare_reports
from tests.helpers.reports import make_report
from tests.helpers.schemas import assert_valid

DIRECTIONS = {"improved", "regressed", "mixed"}


def test_every_task_low_power_makes_the_aggregate_inconclusive() -> None:
    doc = compare_reports(make_report({"a": "FFFF", "b": "FFFF"}), make_report({"a": "PPPP", "b": "PPPP"},
                                                                                  config="cand"))
    assert_valid("comparison", doc, "comparison")
    assert [t["verdict"] for t in doc["tasks"]] == ["low_power", "low_power"]
    assert doc["aggregate"]["verdict"] == "inconclusive"
    assert doc["aggregate"]["reason"].startswith("low power: 2 of 2 paired task(s)")
    assert "**Verdict: inconclusive** — low power" in render_comparison_markdown(doc)


def test_one_low_power_task_is_enough_for_no_claim() -> None:
    base = make_report({"a": "FFFFFFFFFF", "b": "FFF"})
    cand = make_report({"a": "PPPPPPPPPP", "b": "PPP"}, config="cand")
    assert compare_reports(base, cand)["aggregate"]["verdict"] == "inconclusive"


def test_enough_runs_still_claim_a_direction() -> None:
    doc = compare_reports(make_report({"a": "FFFFF"}), make_report({"a": "PPPPP"}, config="cand"))
    assert doc["aggregate"]["verdict"] == "improved"


def test_admission_fails_its_first_clause_on_low_power_and_says_why() -> None:
    result = admit(make_report({"a": "FF"}), make_report({"a": "PP"}, config="cand"))
    first = result.clauses[0]
    assert (first.id, first.status) == ("improved", "fail")
    assert "inconclusive: low power" in first.detail


@given(st.lists(st.tuples(st.text("PFB", min_size=1, max_size=9), st.text("PFB", min_size=1, max_size=9)),
                min_size=1, max_size=4))
def test_any_low_power_pair_claims_no_direction(pairs: list[tuple[str, str]]) -> None:
    base = {f"t{i}": b for i, (b, _) in enumerate(pairs)}
    cand = {f"t{i}": c for i, (_, c) in enumerate(pairs)}
    doc = compare_reports(make_report(base), make_report(cand, config="cand"))
    if any(min(len(b), len(c)) < 5 for b, c in pairs):
        assert doc["aggregate"]["verdict"] == "inconclusive"
        assert all(t["verdict"] in {"low_power", "inconclusive"} for t in doc["tasks"]
                   if min(t["base"]["judged"], t["cand"]["judged"]) < 5)


def test_a_replay_comparison_has_no_intervals_and_no_direction() -> None:
    base = make_report({"a": "P", "b": "P"}, mode="replay")
    cand = make_report({"a": "F", "b": "P"}, mode="replay", config="cand")
    doc = compare_reports(base, cand)
    assert_valid("comparison", doc, "comparison")
    assert {t["taskId"]: t["verdict"] for t in doc["tasks"]} == {"a": "changed", "b": "unchanged"}
    assert all("wilson95" not in t[side] for t in doc["tasks"] for side in ("base", "cand"))
    assert doc["aggregate"]["verdict"] == "changed" and doc["aggregate"]["lostReliability"] == []
    text = render_comparison_markdown(doc)
    assert "Wilson" not in text.split("## Limits")[0]
    assert "**Verdict: changed**" in text and "regressed" not in text


def test_an_identical_replay_is_unchanged() -> None:
    doc = compare_reports(make_report({"a": "PF"}, mode="replay"), make_report({"a": "PF"}, mode="replay",
                                                                              config="cand"))
    assert doc["aggregate"]["verdict"] == "unchanged"


def test_a_replay_report_carries_no_interval() -> None:
    doc = make_report({"a": "PF"}, mode="replay")
    assert_valid("report", doc, "report")
    assert doc["summary"]["wilson95"] is None and doc["tasks"][0]["wilson95"] is None
    assert doc["summary"]["successRate"] == 0.5
