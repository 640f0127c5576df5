"""`lab plan`: k, runs, cost and time from a baseline report (lab.compare.plan, lab.cli.plan).

The power figures come from lab.compare.power; these tests hold the plan to
relationships (smaller change → more runs, totals = k × tasks × variants,
cost = runs × measured cost per run …), not to hard-coded sample sizes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lab.cli import main
from lab.compare.plan import plan_comparison, render_plan
from lab.errors import ConfigError
from tests.helpers.schemas import assert_valid

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PRICED = GOLDEN / "report" / "report.json"  # live, priced, complete usage
CORPUS = GOLDEN / "report-corpus" / "priced" / "report.json"  # live, incomplete usage, a task without judged runs
REPLAY = GOLDEN / "report-corpus" / "replay" / "report.json"


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def test_plan_totals_cost_and_time_follow_from_the_baseline() -> None:
    report = _load(PRICED)
    doc = plan_comparison(report, 0.10)
    assert_valid("plan", doc, "plan")
    judged = [t for t in report["tasks"] if t["judged"]]
    assert doc["suite"]["runs"] == doc["suite"]["k"] * len(judged) * 2
    assert doc["cost"]["usd"] == pytest.approx(doc["suite"]["runs"] * report["estimated"]["costUsdPerAttempt"])
    assert doc["tokens"]["total"] == round(doc["suite"]["runs"] * report["measured"]["tokensPerAttempt"])
    medians = {t["taskId"]: t["wallMsMedian"] for t in report["measured"]["tasks"]}
    expected = sum(doc["suite"]["k"] * 2 * medians[t["taskId"]] for t in judged)
    assert doc["wallMs"]["total"] == pytest.approx(expected)
    halved = plan_comparison(report, 0.10, jobs=2)
    assert halved["wallMs"]["total"] == pytest.approx(expected / 2)
    three = plan_comparison(report, 0.10, variants=3)
    assert three["suite"]["runs"] == three["suite"]["k"] * len(judged) * 3
    assert three["cost"]["usd"] == pytest.approx(doc["cost"]["usd"] * 1.5)


def test_a_smaller_change_more_power_or_a_smaller_alpha_need_more_runs() -> None:
    report = _load(PRICED)
    wide, narrow = plan_comparison(report, 0.20), plan_comparison(report, 0.05)
    assert narrow["suite"]["k"] > wide["suite"]["k"]
    assert all(n["k"] >= w["k"] for n, w in zip(narrow["tasks"], wide["tasks"], strict=True))
    assert any(n["k"] > w["k"] for n, w in zip(narrow["tasks"], wide["tasks"], strict=True))
    assert plan_comparison(report, 0.05, power=0.95)["suite"]["k"] > narrow["suite"]["k"]
    assert plan_comparison(report, 0.05, alpha=0.01)["suite"]["k"] > narrow["suite"]["k"]
    # the suite pools its tasks: it needs fewer runs per task than the hardest task alone
    assert narrow["suite"]["k"] < max(t["k"] for t in narrow["tasks"])


def test_more_runs_in_the_baseline_detect_a_smaller_change_now() -> None:
    report = _load(PRICED)
    more = copy.deepcopy(report)
    for task in more["tasks"]:
        task["judged"] *= 4
    now, later = plan_comparison(report, 0.1), plan_comparison(more, 0.1)
    # 1-2 judged runs a task detect no change up to 100 points (null); four times as many do
    assert now["suite"]["detectableNow"] is None
    assert later["suite"]["detectableNow"] is not None and later["suite"]["detectableNow"] < 1.0
    assert later["suite"]["k"] == now["suite"]["k"]  # the plan depends on the rates, not on how many runs gave them


def test_k_is_never_below_the_low_power_threshold() -> None:
    doc = plan_comparison(_load(CORPUS), 0.5)
    assert doc["suite"]["k"] == 5 and all(t["k"] >= 5 for t in doc["tasks"])
    assert any("raised to 5" in note for note in doc["notes"])


def test_an_unpriced_baseline_with_incomplete_usage_says_so() -> None:
    doc = plan_comparison(_load(CORPUS), 0.1)
    assert_valid("plan", doc, "plan")
    assert "cost" not in doc and "tokens" not in doc
    assert doc["excludedTasks"] == ["error-line"]
    text = render_plan(doc)
    assert "usage is incomplete" in text and "left out (no judged run in the baseline): error-line" in text
    unpriced = _load(PRICED)
    del unpriced["estimated"]
    text = render_plan(plan_comparison(unpriced, 0.1))
    assert "expected tokens:" in text and "cost is not estimated, tokens only" in text and "expected cost" not in text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"delta": 0.0}, "delta: expected a number in (0, 1)"),
    ({"delta": 1.0}, "delta: expected a number in (0, 1)"),
    ({"delta": 0.1, "power": 0.04}, "must exceed alpha"),
    ({"delta": 0.1, "variants": 1}, "variants: expected at least 2"),
    ({"delta": 0.1, "jobs": 0}, "jobs: expected at least 1"),
])
def test_bad_arguments_are_one_line_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan_comparison(_load(PRICED), **kwargs)


def test_a_replay_baseline_has_no_variance_to_plan_from() -> None:
    with pytest.raises(ConfigError, match="is a replay: .* no run-to-run variance"):
        plan_comparison(_load(REPLAY), 0.1)


def test_a_baseline_without_judged_runs_is_refused() -> None:
    report = _load(PRICED)
    for task in report["tasks"]:
        task["judged"] = 0
    with pytest.raises(ConfigError, match="no judged run"):
        plan_comparison(report, 0.1)


def test_cli_prints_text_or_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(PRICED.parent), "delta=0.10", "power=0.8", "jobs=4"]) == 0
    out = capsys.readouterr().out
    assert "suite (task-weighted mean success rate): k = " in out and "expected cost: $" in out
    assert "at jobs=4" in out
    assert main(["plan", str(PRICED), "delta=0.1", "variants=3", "json=true"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert_valid("plan", doc, "lab plan json=true")
    assert doc["variants"] == 3 and doc["suite"]["runs"] == doc["suite"]["k"] * len(doc["tasks"]) * 3


@pytest.mark.parametrize(("args", "message"), [
    (["nope-report", "delta=0.1"], "lab plan: nope-report: no such report"),
    ([str(PRICED)], "lab plan: delta= is required"),
    ([str(PRICED), "delta=1.5"], "lab plan: delta: expected a number in (0, 1), got '1.5'"),
    ([str(PRICED), "delta=abc"], "lab plan: delta: expected a number in (0, 1), got 'abc'"),
    ([str(PRICED), "delta=0.1", "jobs=two"], "lab plan: jobs: expected a positive integer, got 'two'"),
    ([str(PRICED), "delta=0.1", "k=5"], "lab plan: unknown option 'k'"),
    ([str(REPLAY), "delta=0.1"], "is a replay"),
])
def test_cli_errors_are_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert main(["plan", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
