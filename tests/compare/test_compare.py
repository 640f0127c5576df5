"""Comparing two reports (SPEC K1, K3, K5–K7): every verdict row, built from hand-made reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lab.compare.verdicts
from lab.compare.verdicts import IncompatibleReports, compare_reports, disjoint, render_comparison_markdown
from lab.report import build_report
from lab.report.stats import wilson_interval
from tests.helpers.lab_process import run_cmd
from tests.helpers.reports import make_header, make_records, make_report, write_report_dir
from tests.helpers.schemas import assert_valid


def compared(base: dict[str, Any], cand: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    doc = compare_reports(base, cand, **kwargs)
    assert_valid("comparison", doc, "comparison")
    return doc


def task(doc: dict[str, Any], task_id: str = "t") -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


# --- per-task verdicts ------------------------------------------------------------------------

@pytest.mark.parametrize(("base", "cand", "verdict"), [
    ("FFFFF", "PPPPP", "improved"),
    ("PPPPP", "FFFFF", "regressed"),
    ("PPPFF", "PPPPF", "inconclusive"),
    ("PPPP", "FFFF", "low_power"),
    ("PPPPPPPPPP", "FFFF", "low_power"),
])
def test_task_verdict(base: str, cand: str, verdict: str) -> None:
    doc = compared(make_report({"t": base}), make_report({"t": cand}, config="cand"))
    assert task(doc)["verdict"] == verdict


def test_improved_needs_a_significant_adjusted_test_and_says_so() -> None:
    entry = task(compared(make_report({"t": "FFFFF"}), make_report({"t": "PPPPP"}, config="cand")))
    diff = entry["difference"]
    assert diff["pValue"] == pytest.approx(2 / 252) and diff["pAdjusted"] == diff["pValue"]  # one task: Holm = raw
    assert diff["estimate"] == 1.0 and diff["newcombe95"][0] > 0
    assert "Holm" in entry["reason"] and entry["screen"] == "improved"


def test_holm_across_tasks_can_withhold_a_claim_the_raw_p_would_make() -> None:
    # 10/10 -> 5/10 alone: Fisher p = 0.0325; with a second tested task Holm doubles it past 0.05
    doc = compared(make_report({"t": "P" * 10, "u": "PPPPPFFFFF"}),
                   make_report({"t": "PPPPPFFFFF", "u": "PPPPPFFFFF"}, config="cand"))
    entry = task(doc)
    assert entry["difference"]["pValue"] == pytest.approx(0.0325077, abs=1e-6)
    assert entry["difference"]["pAdjusted"] == pytest.approx(2 * entry["difference"]["pValue"])
    assert entry["verdict"] == "inconclusive" and not entry["lostReliability"]


def test_disjoint_predicate_treats_touching_intervals_as_overlap() -> None:
    assert not disjoint((0.2, 0.5), (0.5, 0.9))
    assert not disjoint((0.5, 0.9), (0.2, 0.5))
    assert disjoint((0.2, 0.5), (0.5000001, 0.9))
    assert not disjoint((0.2, 0.6), (0.5, 0.9))


def test_touching_intervals_are_an_overlap_in_the_wilson_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    # No real counts with n <= 60 give Wilson bounds equal to within 1e-9, so the
    # interval is replaced (pytest monkeypatch, not a mock) to make them touch exactly.
    bounds = {(1, 5): (0.2, 0.5), (4, 5): (0.5, 0.9)}
    monkeypatch.setattr(lab.compare.verdicts, "wilson_interval", lambda c, n: bounds[(c, n)])
    entry = task(compared(make_report({"t": "PFFFF"}), make_report({"t": "PPPPF"}, config="cand")))
    assert entry["screen"] == "overlap" and entry["verdict"] == "inconclusive"


def test_intervals_from_real_counts_match_the_stats_module() -> None:
    entry = task(compared(make_report({"t": "PPPFF"}), make_report({"t": "PPPPF"}, config="cand")))
    assert entry["base"]["wilson95"] == list(wilson_interval(3, 5))
    assert entry["cand"]["wilson95"] == list(wilson_interval(4, 5))


def test_errored_runs_on_one_side_make_a_task_not_comparable() -> None:
    doc = compared(make_report({"t": "FFFFF"}), make_report({"t": "PPPPPE"}, config="cand"))
    entry = task(doc)
    assert entry["verdict"] == "not_comparable"
    assert "errored" in entry["reason"] and "cand 1" in entry["reason"]
    assert entry["cand"]["judged"] == 5 and entry["cand"]["errors"] == 1


def test_different_modes_are_not_comparable_anywhere() -> None:
    doc = compared(make_report({"t": "PPPPP"}), make_report({"t": "PPPPP"}, config="cand", mode="replay"))
    assert task(doc)["verdict"] == "not_comparable" and "different modes" in task(doc)["reason"]
    assert doc["aggregate"]["verdict"] == "not_comparable"
    assert all(not d["comparable"] for d in doc["deltas"].values())
    assert any("different modes" in w for w in doc["warnings"])
    assert "**Verdict: not comparable** — the modes differ." in render_comparison_markdown(doc)


def test_task_absent_from_one_report_is_not_comparable_and_left_out_of_the_aggregate() -> None:
    doc = compared(make_report({"t": "PPPPP", "u": "PPPPP"}), make_report({"t": "PPPPP"}, config="cand"))
    assert task(doc, "u")["verdict"] == "not_comparable" and "absent" in task(doc, "u")["reason"]
    assert doc["aggregate"]["excludedTasks"] == ["u"] and doc["aggregate"]["pairedTasks"] == 1


# --- replay ---------------------------------------------------------------------------------

def test_replay_reports_changed_and_unchanged_tasks() -> None:
    base = make_report({"a": "P", "b": "P"}, mode="replay")
    cand = make_report({"a": "P", "b": "F"}, mode="replay", config="cand")
    doc = compared(base, cand)
    assert doc["replay"] is True
    assert task(doc, "a")["verdict"] == "unchanged"
    assert task(doc, "b")["verdict"] == "changed" and "pass -> fail" in task(doc, "b")["reason"]
    assert any("model quality" in w for w in doc["warnings"])


def test_replay_sees_a_verifier_change_under_the_same_run_status() -> None:
    base = make_report({"a": "F"}, mode="replay")
    records = make_records({"a": "F"}, mode="replay")
    records[0]["verifiers"].append({"id": "scope", "kind": "tree-diff-within", "status": "fail",
                                    "detail": "", "weight": 1.0})
    cand = build_report(make_header(mode="replay", config="cand", k=1), records)
    entry = task(compared(base, cand), "a")
    assert entry["verdict"] == "changed" and "verifier scope" in entry["reason"]


# --- aggregate (K6) -------------------------------------------------------------------------

def test_aggregate_improved_when_the_test_rejects_and_no_task_lost_reliability() -> None:
    doc = compared(make_report({"a": "FFFFF", "b": "PPPPP"}), make_report({"a": "PPPPP", "b": "PPPPP"}, config="c"))
    a = doc["aggregate"]
    assert a["verdict"] == "improved" and a["delta"] == pytest.approx(0.5)
    # b has no variation: the permutation distribution is a's alone, P(|D| >= 0.5) = 2/252
    assert a["pValue"] == pytest.approx(2 / 252) and a["test"] == "stratified permutation test, exact"
    assert a["interval95"][0] > 0.05


ALL = "P" * 10
NONE = "F" * 10


def test_aggregate_mixed_when_it_rose_but_a_task_lost_reliability() -> None:
    base = make_report({"a": NONE, "b": NONE, "c": NONE, "d": NONE, "e": ALL})
    cand = make_report({"a": ALL, "b": ALL, "c": ALL, "d": ALL, "e": NONE}, config="c")
    doc = compared(base, cand)
    assert doc["aggregate"]["verdict"] == "mixed" and doc["aggregate"]["pValue"] < 0.05
    assert doc["aggregate"]["lostReliability"] == ["e"] and task(doc, "e")["verdict"] == "regressed"
    assert "mixed" in render_comparison_markdown(doc).split("\n")[2].lower()


def test_aggregate_unchanged_when_the_interval_lies_within_the_tolerance() -> None:
    tasks = {f"t{i}": "P" * 30 for i in range(10)}
    doc = compared(make_report(tasks), make_report(tasks, config="c"))
    low, high = doc["aggregate"]["interval95"]
    assert doc["aggregate"]["verdict"] == "unchanged" and -0.05 < low < high < 0.05


def test_aggregate_inconclusive_when_nothing_changed_but_the_interval_is_wide() -> None:
    doc = compared(make_report({"a": "PPPFF"}), make_report({"a": "PPPFF"}, config="c"))
    a = doc["aggregate"]
    assert a["verdict"] == "inconclusive" and a["delta"] == 0 and a["pValue"] == pytest.approx(1.0)
    assert "kForEquivalence" in a and "equivalence" in a["reason"]


def test_aggregate_regressed_when_the_test_rejects_a_fall() -> None:
    doc = compared(make_report({"a": ALL, "b": ALL}), make_report({"a": NONE, "b": "PPFFFFFFFF"}, config="c"))
    assert doc["aggregate"]["verdict"] == "regressed" and doc["aggregate"]["delta"] == pytest.approx(-0.9)


def test_a_lost_task_with_an_aggregate_that_did_not_move_is_inconclusive_and_says_so() -> None:
    doc = compared(make_report({"a": "PPPPP", "b": "FFFFF"}), make_report({"a": "FFFFF", "b": "PPPPP"}, config="c"))
    assert task(doc, "a")["verdict"] == "regressed" and task(doc, "b")["verdict"] == "improved"
    assert doc["aggregate"]["verdict"] == "inconclusive" and "1 task(s) lost reliability" in doc["aggregate"]["reason"]


@pytest.mark.parametrize(("tolerance", "verdict"), [(0.2, "inconclusive"), (0.15, "inconclusive"),
                                                    (0.1, "improved")])
def test_a_significant_rise_must_exceed_the_tolerance_strictly(tolerance: float, verdict: str) -> None:
    base = {f"t{i}": "P" * 20 + "F" * 20 for i in range(10)}
    cand = {f"t{i}": "P" * 26 + "F" * 14 for i in range(10)}  # +15 points on every task
    doc = compared(make_report(base), make_report(cand, config="c"), tolerance=tolerance)
    assert doc["aggregate"]["pValue"] < 0.001
    assert doc["aggregate"]["verdict"] == verdict and doc["tolerance"] == tolerance


def test_an_inconclusive_aggregate_names_the_k_that_would_decide() -> None:
    doc = compared(make_report({"a": "PPPPPFFFFF", "b": "PPPPPFFFFF"}),
                   make_report({"a": "PPPPPPPFFF", "b": "PPPPPPPFFF"}, config="c"))
    a = doc["aggregate"]
    assert a["verdict"] == "inconclusive" and a["kToDecide"] > 10
    assert f"k={a['kToDecide']} runs per task and side would detect a change of 20.0 points" in a["reason"]


def test_a_fall_that_is_not_significant_is_no_lost_reliability() -> None:
    entry = task(compared(make_report({"t": "PPPFF"}), make_report({"t": "PPFFF"}, config="c")))
    assert entry["verdict"] == "inconclusive" and not entry["lostReliability"]
    assert entry["base"]["passHatK"] == entry["cand"]["passHatK"] == 0.0 and entry["passHatKDip"] is False


def test_a_pass_hat_k_dip_is_shown_not_a_verdict() -> None:
    entry = task(compared(make_report({"t": "P" * 20}), make_report({"t": "P" * 19 + "F"}, config="c")))
    assert entry["successRateDelta"] == pytest.approx(-0.05)
    assert entry["passHatKDip"] is True and entry["lostReliability"] is False and entry["verdict"] == "inconclusive"


def test_the_power_line_and_the_task_sample_view() -> None:
    doc = compared(make_report({"a": "P" * 10 + "F" * 10, "b": "P" * 16 + "F" * 4}),
                   make_report({"a": "P" * 12 + "F" * 8, "b": "P" * 18 + "F" * 2}, config="c"))
    power = doc["aggregate"]["power"]
    assert power["power"] == 0.8 and power["alpha"] == 0.05 and power["perTaskAlpha"] == 0.025
    assert 0 < power["aggregate"] < power["perTaskMedian"] < 1
    assert doc["aggregate"]["taskSample"] == {"meanDifference": pytest.approx(0.1), "standardError": pytest.approx(0.0)}
    assert "Power: with these runs" in render_comparison_markdown(doc)


def test_tolerance_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        compare_reports(make_report({"t": "P"}), make_report({"t": "P"}), tolerance=1.0)


# --- compatibility --------------------------------------------------------------------------

@pytest.mark.parametrize("change", [{"suite_version": "1.1.0"}, {"suite_id": "other"}])
def test_different_suite_or_version_is_incompatible(change: dict[str, str]) -> None:
    with pytest.raises(IncompatibleReports, match="differs"):
        compare_reports(make_report({"t": "PPPPP"}), make_report({"t": "PPPPP"}, **change))


def test_same_version_different_digest_is_flagged() -> None:
    doc = compared(make_report({"t": "PPPPP"}), make_report({"t": "PPPPP"}, suite_digest="f" * 64))
    assert doc["suiteDigestMismatch"] is True
    assert any("forgotten suiteVersion bump?" in w for w in doc["warnings"])
    assert compared(make_report({"t": "P"}), make_report({"t": "P"}))["suiteDigestMismatch"] is False


# --- deltas (K3) ----------------------------------------------------------------------------

def test_token_and_time_deltas_per_success() -> None:
    doc = compared(make_report({"t": "PPPPP"}, tokens=(1000, 200)), make_report({"t": "PPPPP"}, tokens=(1500, 300)))
    tokens = doc["deltas"]["tokensPerSuccess"]
    assert (tokens["base"], tokens["cand"], tokens["comparable"]) == (1200, 1800, True)
    assert tokens["relative"] == pytest.approx(0.5)
    assert doc["deltas"]["wallMsPerSuccess"]["delta"] == 0


def test_different_compaction_makes_token_deltas_not_comparable() -> None:
    on, off = {"enabled": True, "threshold": 0.8}, {"enabled": False, "threshold": 0.8}
    doc = compared(make_report({"t": "PPPPP"}, compaction=on, cached=100),
                   make_report({"t": "PPPPP"}, compaction=off, cached=300))
    for name in ("tokensPerSuccess", "cachedInputRatio"):
        assert doc["deltas"][name]["comparable"] is False and "compaction" in doc["deltas"][name]["reason"]
    assert doc["deltas"]["wallMsPerSuccess"]["comparable"] is True


def test_compaction_absent_from_both_counts_as_equal_but_absent_from_one_does_not() -> None:
    assert compared(make_report({"t": "P"}), make_report({"t": "P"}))["deltas"]["tokensPerSuccess"]["comparable"]
    doc = compared(make_report({"t": "P"}), make_report({"t": "P"}, compaction={"enabled": True, "threshold": 0.8}))
    assert "unknown for base" in doc["deltas"]["tokensPerSuccess"]["reason"]


def test_cached_input_ratio_delta_and_absent_stays_absent() -> None:
    doc = compared(make_report({"t": "PPPPP"}, cached=100), make_report({"t": "PPPPP"}, cached=500))
    assert doc["deltas"]["cachedInputRatio"]["delta"] == pytest.approx(0.4)
    doc = compared(make_report({"t": "PPPPP"}, cached=100), make_report({"t": "PPPPP"}))
    cached = doc["deltas"]["cachedInputRatio"]
    assert cached["comparable"] is False and "cand" not in cached and "absent from the cand" in cached["reason"]
    assert "cachedInputRatio" not in compared(make_report({"t": "P"}), make_report({"t": "P"}))["deltas"]


def test_usage_unknown_leaves_token_deltas_absent() -> None:
    doc = compared(make_report({"t": "PPPPP"}, tokens=None), make_report({"t": "PPPPP"}, tokens=None))
    assert "tokensPerSuccess" not in doc["deltas"] and "wallMsPerSuccess" in doc["deltas"]


@pytest.mark.parametrize(("cand_rates", "comparable"), [({"input": 2.0, "output": 8.0}, True),
                                                        ({"input": 3.0, "output": 8.0}, False)])
def test_cost_delta_only_with_identical_rates(cand_rates: dict[str, float], comparable: bool) -> None:
    doc = compared(make_report({"t": "PPPPP"}, rates={"input": 2.0, "output": 8.0}),
                   make_report({"t": "PPPPP"}, rates=cand_rates))
    cost = doc["deltas"]["costUsdPerSuccess"]
    assert cost["comparable"] is comparable
    assert cost["base"] == pytest.approx((1000 * 2.0 + 200 * 8.0) / 1e6)
    if not comparable:
        assert cost["reason"] == "different rates"


# --- document and Markdown (K5) -------------------------------------------------------------

def test_markdown_ends_with_the_limits() -> None:
    doc = compared(make_report({"t": "FFFFF"}), make_report({"t": "PPPPP"}, config="c"))
    text = render_comparison_markdown(doc)
    limits = text[text.index("## Limits"):]
    for words in ("suite's own tasks", "independent", "holm-adjusted", "errored runs", "not claimed"):
        assert words in limits.lower()
    assert text.index("## Tasks") < text.index("## Limits") and text.endswith(doc["limits"][-1] + "\n")
    assert list(doc)[0] == "schemaVersion"


# --- CLI ------------------------------------------------------------------------------------

def published(data: Path, tasks: dict[str, str], **header: Any) -> Path:
    head = make_header(k=max(map(len, tasks.values())), **header)
    records = make_records(tasks, seed=head["seed"], mode=head["mode"])
    return write_report_dir(data, build_report(head, records), records)


def test_cli_compares_run_ids_and_writes_both_files(tmp_path: Path) -> None:
    base = published(tmp_path / "data", {"t": "FFFFF"})
    cand = published(tmp_path / "data", {"t": "PPPPP"}, config="cand")
    out = tmp_path / "cmp"
    result = run_cmd(["lab", "compare", base.name, str(cand), f"out={out}"], tmp_path / "data")
    assert result.returncode == 0, result.stderr
    assert "verdict: improved" in result.stdout
    doc = json.loads((out / "comparison.json").read_text())
    assert_valid("comparison", doc, "comparison.json")
    assert (out / "comparison.md").read_text() == render_comparison_markdown(doc)


def test_cli_prints_json_with_json_true(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main  # in-process: the real `lab compare` process is run above

    base = published(tmp_path, {"t": "PPPPP"})
    assert main(["compare", str(base / "report.json"), str(base), "json=true"]) == 0
    aggregate = json.loads(capsys.readouterr().out)["aggregate"]
    assert aggregate["verdict"] == "inconclusive" and aggregate["pValue"] == 1.0  # 5/5 twice: too few runs to show equivalence


def test_cli_incompatible_suite_version_exits_3(tmp_path: Path) -> None:
    base = published(tmp_path, {"t": "PPPPP"})
    cand = published(tmp_path, {"t": "PPPPP"}, suite_version="2.0.0", config="cand")
    result = run_cmd(["lab", "compare", str(base), str(cand)], tmp_path)
    assert result.returncode == 3
    assert "suite version differs" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("content", [None, "{not json", '{"schemaVersion": 1}', '{"schemaVersion": 9}'])
def test_cli_missing_or_invalid_report_is_one_line(tmp_path: Path, content: str | None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main  # in-process: the entry point's own handling of a user error

    bad = tmp_path / "report.json"
    if content is not None:
        bad.write_text(content)
    good = published(tmp_path / "data", {"t": "P"})
    assert main(["compare", str(bad), str(good)]) == 1
    stderr = capsys.readouterr().err
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert str(bad) in stderr


def test_cli_unknown_option_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main

    good = published(tmp_path, {"t": "P"})
    assert main(["compare", str(good), str(good), "tolerence=0.1"]) == 1
    assert "unknown option 'tolerence'" in capsys.readouterr().err


@pytest.mark.slow
def test_doit_compare_builds_the_target_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = published(data, {"t": "FFFFF"})
    cand = published(data, {"t": "PPPPP"}, config="cand")
    dodo = tmp_path / "dodo.py"
    dodo.write_text("from lab.build.cmdline import doit_config\nfrom lab.build.compare_export import task_compare, task_export\n"
                    "DOIT_CONFIG = doit_config()\n")
    argv = ["doit", "-f", str(dodo), "compare", f"base={base.name}", f"cand={cand}", f"out={tmp_path / 'o'}"]
    first = run_cmd(argv, data)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "verdict: improved" in first.stdout
    assert_valid("comparison", json.loads((tmp_path / "o" / "comparison.json").read_text()), "comparison.json")
    assert (tmp_path / "o" / "comparison.html").is_file()
    second = run_cmd(argv, data)
    assert second.returncode == 0 and "comparison:" not in second.stdout
    assert f"comparison up to date: {tmp_path / 'o' / 'comparison.md'}" in second.stdout  # says where it is
    again = run_cmd([*argv, "tolerance=0.5"], data)
    assert "verdict: improved" in again.stdout
    typo = run_cmd(["doit", "-f", str(dodo), "compare", f"base={base}", f"cnad={cand}"], data)
    assert typo.returncode == 1 and "unknown variable 'cnad'" in typo.stderr
