"""index.html's pictures: success rate with Wilson error bars, pass^k / pass@k, tokens and wall time per run,
and the run evidence collapsed per task — checked on the elements Chromium builds, against report.json."""

from __future__ import annotations

import json
import math
import random
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.report.evidence as evidence
from lab.report import build_report, write_report
from lab.report.charts import nice_ticks, wall_unit
from lab.report.distribution import RELATIVE_ACCURACY, Distribution
from tests.helpers.chromium import dump_dom, render
from tests.helpers.dom import Element, parse
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid

FIVE = ("min", "q1", "median", "q3", "max")


# --- the per-run distributions (report.json measured.tasks[].tokensPerRun / wallMsPerRun) ---

@pytest.mark.parametrize(("values", "quartiles"), [
    # R: quantile(x) (type 7, R's default), Hyndman & Fan (1996) definition 7
    ([7, 15, 36, 39, 40, 41], (20.25, 37.5, 39.75)),
    (list(range(1, 11)), (3.25, 5.5, 7.75)),
    ([6, 7, 15, 36, 39, 40, 41, 42, 43, 47, 49], (25.5, 40.0, 42.5)),
    ([5], (5.0, 5.0, 5.0)),
    ([0, 0, 0, 10], (0.0, 0.0, 2.5)),
])
def test_exact_quartiles_are_hyndman_fan_type_7(values: list[int], quartiles: tuple[float, float, float]) -> None:
    spread = Distribution()
    for value in reversed(values):
        spread.add(value)
    summary = spread.summary()
    assert summary is not None
    assert (summary["q1"], summary["median"], summary["q3"]) == pytest.approx(quartiles, abs=1e-12)
    assert (summary["min"], summary["max"], summary["runs"], summary["exact"]) == (min(values), max(values),
                                                                                   len(values), True)


def test_nothing_added_is_no_summary() -> None:
    assert Distribution().summary() is None


def order_statistic(values: list[float], q: float) -> float:
    """The value of rank ⌊q·(n − 1)⌋ (0-based) among ``values`` sorted: what the sketch approximates."""
    return sorted(values)[math.floor(q * (len(values) - 1))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10**7), st.floats(0, 1e6, allow_nan=False)), min_size=1, max_size=300),
       st.integers(1, 60))
def test_past_the_exact_limit_quartiles_are_within_one_percent(values: list[float], exact_runs: int) -> None:
    spread = Distribution(exact_runs=exact_runs)
    for value in values:
        spread.add(value)
    summary = spread.summary()
    assert summary is not None
    assert summary["exact"] == (len(values) <= exact_runs)
    assert summary["min"] == min(values) and summary["max"] == max(values) and summary["runs"] == len(values)
    five = [summary[f] for f in FIVE]
    assert five == sorted(five)
    if not summary["exact"]:
        for q, key in ((0.25, "q1"), (0.5, "median"), (0.75, "q3")):
            assert summary[key] == pytest.approx(order_statistic(values, q), rel=RELATIVE_ACCURACY, abs=1e-9), key


def test_a_task_of_many_runs_is_summarised_in_bounded_memory() -> None:
    rng = random.Random(3)
    spread = Distribution(exact_runs=1000)
    values = [rng.lognormvariate(8, 1.5) for _ in range(20_000)]
    for value in values[:2000]:
        spread.add(value)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for value in values[2000:]:
            spread.add(value)
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert grown < 64_000, f"{grown} bytes for 18 000 more values"
    summary = spread.summary()
    assert summary is not None and summary["exact"] is False
    assert summary["median"] == pytest.approx(order_statistic(values, 0.5), rel=RELATIVE_ACCURACY)


def mixed_records() -> list[dict[str, Any]]:
    """Five tasks: steady, flaky, failing with one run that reported no usage, all errored, and a long name."""
    records = [make_record("alpha", r, wall_ms=1000 + 250 * r, tokens=(1000 + 100 * r, 100)) for r in range(6)]
    records += [make_record("bravo", r, status="pass" if r % 3 == 0 else "fail", wall_ms=20_000 + 4000 * r,
                            tokens=(9000 + 1500 * r, 900)) for r in range(9)]
    records += [make_record("charlie", r, status="fail", wall_ms=5000, tokens=None if r == 1 else (3000, 300))
                for r in range(3)]
    records += [make_record("delta", r, status="error") for r in range(2)]
    records += [make_record("echo-a-task-whose-name-is-longer-than-the-label-column", r,
                            status="budget_exceeded" if r else "pass", wall_ms=60_000) for r in range(2)]
    return records


def published(tmp_path: Path, records: list[dict[str, Any]], **header: Any) -> tuple[dict[str, Any], Path]:
    out = tmp_path / "report"
    write_report(out, build_report(make_header(**header), records), records)
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert_valid("report", doc, "report.json")
    return doc, out


def test_report_json_has_the_spread_of_each_tasks_runs(tmp_path: Path) -> None:
    doc, _ = published(tmp_path, mixed_records(), k=9)
    measured = {t["taskId"]: t for t in doc["measured"]["tasks"]}
    assert measured["alpha"]["wallMsPerRun"] == {"runs": 6, "min": 1000.0, "q1": 1312.5, "median": 1625.0,
                                                 "q3": 1937.5, "max": 2250.0, "exact": True}
    assert measured["alpha"]["tokensPerRun"]["median"] == 1350.0  # runs of 1100 … 1600 tokens
    assert "tokensPerRun" not in measured["charlie"]  # one judged run did not report usage: unknown, not 0
    assert measured["charlie"]["wallMsPerRun"]["runs"] == 3
    assert "delta" not in measured  # nothing judged


# --- the pictures, as Chromium builds them ---

def axis(svg: Element) -> tuple[float, float, float, float]:
    """(x of the first tick, its value, x of the last tick, its value) of a chart's axis."""
    ticks = svg.find_all("line", "tick")
    return ticks[0].num("x1"), float(ticks[0].attrs["data-value"]), ticks[-1].num("x1"), float(ticks[-1].attrs["data-value"])


def value_at(svg: Element, x: float) -> float:
    """The axis value at ``x`` (px), read from the chart's own tick positions."""
    x0, v0, x1, v1 = axis(svg)
    return v0 + (x - x0) * (v1 - v0) / (x1 - x0)


def rows(svg: Element) -> dict[str, Element]:
    return {g.attrs["data-task"]: g for g in svg.find_all("g", "row")}


@pytest.mark.slow
def test_chromium_draws_each_figure_where_report_json_puts_it(tmp_path: Path,
                                                               keep_artifact: Callable[[Path, str], None]) -> None:
    doc, out = published(tmp_path, mixed_records(), k=9)
    url = (out / "index.html").as_uri()
    shot = tmp_path / "index.png"
    page = parse(render(url, shot, (1280, 2600)))
    assert shot.stat().st_size > 20_000  # the pictures are drawn (a blank page is a few kB)
    keep_artifact(shot, "index.png")  # CI keeps the picture for a reader
    assert not page.find_all("script")
    tasks = {t["taskId"]: t for t in doc["tasks"]}
    per_px = 0.01  # coordinates are written to 0.01 px

    rate = page.by_id("chart-rate")
    assert rate.attrs["role"] == "img"
    assert [page.by_id(i).tag for i in rate.attrs["aria-labelledby"].split()] == ["title", "desc"]
    labels = [t.text() for t in rate.find_all("text", "tick-label")]  # above the first row and below the last
    assert labels == [label for label in ("0%", "25%", "50%", "75%", "100%") for _ in "ab"]
    assert "95 % Wilson interval" in rate.find_all("text", "axis-title")[0].text()
    drawn = rows(rate)
    assert list(drawn) == ["all tasks", *tasks]  # the suite first, then every task in report order
    for name, row in drawn.items():
        block = doc["summary"] if name == "all tasks" else tasks[name]
        if block["successRate"] is None:
            assert not row.find_all("line", "interval") and not row.find_all("circle", "estimate")
            assert row.find_all("text", "absent")[0].text() == "nothing judged"
            continue
        (bar,) = row.find_all("line", "interval")
        (dot,) = row.find_all("circle", "estimate")
        low, high = block["wilson95"]
        assert value_at(rate, bar.num("x1")) == pytest.approx(low, abs=per_px / 280)
        assert value_at(rate, bar.num("x2")) == pytest.approx(high, abs=per_px / 280)
        assert value_at(rate, dot.num("cx")) == pytest.approx(block["successRate"], abs=per_px / 280)
        assert len(row.find_all("line", "interval-end")) == 2
        assert f"({block['passes']}/{block['judged']} judged)" in row.find_all("text", "value")[0].text()
    assert len(rate.find_all("line", "interval")) == sum(t["judged"] > 0 for t in tasks.values()) + 1

    passk = page.by_id("chart-passk")
    for name, row in rows(passk).items():
        block = doc["summary"] if name == "all tasks" else tasks[name]
        if block["passAtK"] is None:
            assert not row.find_all("circle", "pass-at-k")
            continue
        (square,) = row.find_all("rect", "pass-hat-k")
        (dot,) = row.find_all("circle", "pass-at-k")
        assert value_at(passk, square.num("x") + square.num("width") / 2) == pytest.approx(block["passHatK"], abs=1e-4)
        assert value_at(passk, dot.num("cx")) == pytest.approx(block["passAtK"], abs=1e-4)

    measured = {t["taskId"]: t for t in doc["measured"]["tasks"]}
    for key, unit in (("tokensPerRun", "tokens"), ("wallMsPerRun", "(s)")):  # ticks carry the value in tokens / ms
        chart = page.by_id(f"chart-{key}")
        assert unit in chart.find_all("text", "axis-title")[0].text()
        labels = [t.text() for t in chart.find_all("text", "tick-label")]
        assert labels[0] == "0" and len(labels) >= 6
        drawn = rows(chart)
        assert list(drawn) == list(tasks)
        with_figure = [name for name in tasks if key in measured.get(name, {})]
        assert len(chart.find_all("rect", "box")) == len(with_figure)
        for name, row in drawn.items():
            spread = measured.get(name, {}).get(key)
            if spread is None:
                assert not row.find_all("rect", "box")  # never drawn as 0
                assert row.find_all("text", "absent")[0].text() == ("nothing judged" if name == "delta"
                                                                    else "not measured")
                continue
            (box,) = row.find_all("rect", "box")
            (median,) = row.find_all("line", "median")
            (whisker,) = row.find_all("line", "whisker")
            drawn_five = [whisker.num("x1"), box.num("x"), median.num("x1"), box.num("x") + box.num("width"),
                          whisker.num("x2")]
            for figure, x in zip(FIVE, drawn_five, strict=True):
                px = 1.01 if figure == "q3" else per_px  # a box is at least 1 px wide
                tolerance = px / 280 * (axis(chart)[3] - axis(chart)[1])
                assert value_at(chart, x) == pytest.approx(spread[figure], abs=tolerance), (key, name, figure)
        assert page.by_id(f"chart-{key}").ancestor("figure") is not None


@pytest.mark.slow
def test_the_run_evidence_is_collapsed_per_task_and_a_link_opens_its_task(tmp_path: Path) -> None:
    records = mixed_records()
    doc, out = published(tmp_path, records, k=9)
    target = "bravo"
    page = parse(dump_dom((out / "index.html").as_uri() + f"#{evidence.run_anchor(target, 4)}"))
    groups = page.find_all("details", "task-runs")
    assert [g.attrs["data-task"] for g in groups] == [t["taskId"] for t in doc["tasks"]]
    for group, task in zip(groups, doc["tasks"], strict=True):
        assert ("open" in group.attrs) == (task["taskId"] == target)  # the link opened its task's runs only
        counts = {k: int(group.attrs[f"data-{k}"]) for k in ("pass", "fail", "budget-exceeded", "error")}
        assert counts == {"pass": task["passes"], "fail": task["fails"], "budget-exceeded": task["budgetExceeded"],
                          "error": task["errors"]}
        assert group.children[0].tag == "summary" and group.children[0].text().startswith(task["taskId"])
        assert {s.attrs["id"] for s in group.find_all("section", "run")} == {
            evidence.run_anchor(r["taskId"], r["repetition"]) for r in records if r["taskId"] == task["taskId"]}
    summary = groups[[g.attrs["data-task"] for g in groups].index("bravo")].children[0].text()
    assert summary == "bravo — 9 runs: 3 passed, 6 failed"


# --- cheap checks on the written page (the same elements, parsed in-process) ---

def test_a_replay_draws_no_interval(tmp_path: Path) -> None:
    _, out = published(tmp_path, mixed_records()[:6], mode="replay")
    rate = parse((out / "index.html").read_text(encoding="utf-8")).by_id("chart-rate")
    assert rate.find_all("circle", "estimate") and not rate.find_all("line", "interval")
    assert "Wilson" not in rate.find_all("text", "axis-title")[0].text()


def test_no_usage_anywhere_leaves_the_token_chart_out_and_says_why(tmp_path: Path) -> None:
    records = [make_record("a", r, tokens=None, wall_ms=400 + r) for r in range(3)]
    _, out = published(tmp_path, records)
    page = parse((out / "index.html").read_text(encoding="utf-8"))
    assert not [e for e in page.iter() if e.attrs.get("id") == "chart-tokensPerRun"]
    assert "ms" in page.by_id("chart-wallMsPerRun").find_all("text", "axis-title")[0].text()
    notices = [p.text() for p in page.find_all("p", "notice")]
    assert "No chart of tokens per run: no task's judged runs all reported usage." in notices


def test_run_pages_collapse_each_tasks_runs_on_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence, "RUNS_PER_PAGE", 10)
    records = [make_record(f"t{i % 3}", i // 3, status="pass" if i % 4 else "fail") for i in range(35)]
    _, out = published(tmp_path, records, k=12)
    seen: dict[str, set[int]] = {}
    for page_path in sorted((out / "pages").iterdir()):
        groups = parse(page_path.read_text(encoding="utf-8")).find_all("details", "task-runs")
        assert len({g.attrs["data-task"] for g in groups}) == len(groups)  # one group per task on a page
        for group in groups:
            task = group.attrs["data-task"]
            reps = [int(s.attrs["id"].rpartition("-r")[2]) for s in group.find_all("section", "run")]
            assert int(group.attrs["data-runs"]) == len(reps)
            assert int(group.attrs["data-pass"]) + int(group.attrs["data-fail"]) == len(reps)
            assert group.children[0].text().startswith(f"{task} r{reps[0]}–r{reps[-1]} on this page")
            seen.setdefault(task, set()).update(reps)
    assert seen == {f"t{t}": {r["repetition"] for r in records if r["taskId"] == f"t{t}"} for t in range(3)}


@pytest.mark.parametrize(("high", "ticks"), [(0.0, [0.0, 1.0]), (1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
                                             (2300, [0, 500, 1000, 1500, 2000, 2500]), (7, [0, 2, 4, 6, 8]),
                                             (5e-324, [0.0, 5e-324]), (float("inf"), [0.0, 1.0])])
def test_axis_ticks_are_round_and_reach_the_largest_value(high: float, ticks: list[float]) -> None:
    assert nice_ticks(high) == pytest.approx(ticks)


@pytest.mark.parametrize(("high_ms", "unit"), [(900, "ms"), (9_999, "ms"), (10_000, "s"), (3_600_000, "min")])
def test_wall_time_axis_unit(high_ms: float, unit: str) -> None:
    assert wall_unit(high_ms).name == unit


@given(st.floats(min_value=0, allow_nan=False, allow_infinity=False))
def test_axis_ticks_start_at_zero_and_reach_any_finite_high(high: float) -> None:
    ticks = nice_ticks(high)
    assert ticks[0] == 0 and ticks[-1] >= high and len(ticks) <= 12
