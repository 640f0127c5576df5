"""The admission rule (SPEC K4): every clause, the verdict, and `lab admit` exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.compare.admit import admit
from lab.report import build_report
from tests.helpers.lab_process import run_cmd
from tests.helpers.reports import make_header, make_records, make_report, write_report_dir

BETTER = {"a": "PPFFFFFFFF", "b": "PPPPPPPPPP"}  # base: a 2/10, b 10/10
BEST = {"a": "PPPPPPPPPP", "b": "PPPPPPPPPP"}    # cand: a 10/10 (disjoint), b unchanged


def pair(seed: int = 0, cand_tasks: dict[str, str] = BEST,
         cand_tokens: tuple[int, int] = (1000, 200)) -> tuple[dict[str, Any], dict[str, Any]]:
    return (make_report(BETTER, seed=seed, config="base"),
            make_report(cand_tasks, seed=seed, config="cand", tokens=cand_tokens))


def statuses(result: Any) -> dict[str, str]:
    return {c.id: c.status for c in result.clauses}


def test_admitted_when_the_pair_and_its_repetition_clear_every_clause() -> None:
    result = admit(*pair(seed=0), repeat=pair(seed=100))
    assert statuses(result) == {"improved": "pass", "no-lost-reliability": "pass", "tokens": "pass",
                                "repeated": "pass"}
    assert result.verdict == "admit"


def test_without_a_repeated_pair_the_verdict_cannot_be_admit() -> None:
    result = admit(*pair())
    assert statuses(result)["repeated"] == "not checked"
    assert [statuses(result)[c] for c in ("improved", "no-lost-reliability", "tokens")] == ["pass"] * 3
    assert result.verdict == "do not admit"


ALL, NONE = "P" * 10, "F" * 10
ROSE_BUT_E_BROKE = ({"a": NONE, "b": NONE, "c": NONE, "d": NONE, "e": ALL},
                    {"a": ALL, "b": ALL, "c": ALL, "d": ALL, "e": NONE})


def test_mixed_is_not_an_improvement() -> None:
    base = make_report(ROSE_BUT_E_BROKE[0], config="base")
    cand = make_report(ROSE_BUT_E_BROKE[1], config="cand")
    result = admit(base, cand, repeat=pair(seed=1))
    assert statuses(result)["improved"] == "fail" and "mixed" in result.clauses[0].detail
    assert statuses(result)["no-lost-reliability"] == "fail" and "e (10/10 -> 0/10" in result.clauses[1].detail
    assert result.verdict == "do not admit"


def test_no_change_is_not_an_improvement() -> None:
    same = make_report(BETTER, config="cand")
    result = admit(make_report(BETTER), same)
    assert statuses(result)["improved"] == "fail" and "inconclusive" in result.clauses[0].detail


def test_the_gate_is_stricter_than_the_verdict_a_raw_significant_fall_blocks() -> None:
    # b: 10/10 -> 5/10, Fisher p = 0.0325: significant alone, not after Holm across three tasks (x2)
    half = "PPPPPFFFFF"
    base = make_report({**BETTER, "c": half}, config="base")
    cand = make_report({"a": ALL, "b": half, "c": half}, config="cand")
    result = admit(base, cand)
    comparison_lost = [c for c in result.clauses if c.id == "no-lost-reliability"][0]
    assert comparison_lost.status == "fail" and "b (10/10 -> 5/10, p=0.0325)" in comparison_lost.detail
    from lab.compare.verdicts import compare_reports
    assert compare_reports(base, cand)["aggregate"]["lostReliability"] == []  # the verdict makes no such claim


def test_tokens_detail_prints_the_estimate_and_its_interval() -> None:
    result = admit(*pair(cand_tokens=(1100, 220)))
    detail = result.clauses[2].detail
    assert statuses(result)["tokens"] == "pass"
    assert detail.startswith("total tokens per success 2000.0 -> 1320.0 (-34.0%, 95% CI [")
    assert "judged on the estimate" in detail


def test_a_compaction_a_b_is_judged_on_total_tokens_including_compaction_calls() -> None:
    on, off = {"enabled": True, "threshold": 0.8}, {"enabled": False, "threshold": 0.8}
    base = make_report(BETTER, config="base", compaction=off, tokens=(1000, 200))
    # compaction on: the main loop spends less, the compaction calls are counted on top
    cand = make_report(BEST, config="cand", compaction=on, tokens=(900, 100), compaction_tokens=(300, 50))
    result = admit(base, cand)
    tokens = result.clauses[2]
    assert tokens.status == "pass", tokens.detail
    assert "total tokens per success 2000.0 -> 1350.0" in tokens.detail
    assert "compaction tokens per success: base 0.0, cand 350.0" in tokens.detail
    pricier = make_report(BEST, config="cand", compaction=on, tokens=(900, 100), compaction_tokens=(1500, 400))
    assert admit(base, pricier).clauses[2].status == "fail"  # 2900 per success: +45 %


@pytest.mark.parametrize(("tokens", "status"), [((2000, 400), "pass"), ((2001, 400), "fail")])
def test_tokens_per_success_may_rise_at_most_20_percent(tokens: tuple[int, int], status: str) -> None:
    # base: 20 runs x 1200 tokens / 12 passes = 2000 per success; cand: 20 passes, sum(tokens) each
    base, cand = pair(cand_tokens=tokens)
    result = admit(base, cand)
    assert statuses(result)["tokens"] == status


def test_tokens_rise_of_eighty_percent_fails_the_default_limit() -> None:
    base, cand = pair(cand_tokens=(3000, 600))  # 3600 per success against 2000: +80 %
    result = admit(base, cand, repeat=pair(seed=1, cand_tokens=(3000, 600)))
    assert statuses(result)["tokens"] == "fail" and "+80.0%" in result.clauses[2].detail
    assert result.verdict == "do not admit"


def test_tokens_not_measured_fail_the_clause() -> None:
    base = make_report(BETTER, tokens=None)
    cand = make_report(BEST, config="cand", tokens=None)
    result = admit(base, cand)
    assert statuses(result)["tokens"] == "fail" and "not measured" in result.clauses[2].detail


def test_a_repeated_pair_at_the_same_seeds_is_not_a_repetition() -> None:
    result = admit(*pair(seed=0), repeat=pair(seed=0))
    assert statuses(result)["repeated"] == "fail" and "same seed" in result.clauses[3].detail


def test_a_repeated_pair_of_other_configurations_is_refused() -> None:
    other = (make_report(BETTER, seed=5, config="other"), make_report(BEST, seed=5, config="cand"))
    result = admit(*pair(), repeat=other)
    assert statuses(result)["repeated"] == "fail" and "another configuration" in result.clauses[3].detail


def test_a_repeated_pair_that_is_mixed_fails() -> None:
    mixed = (make_report(ROSE_BUT_E_BROKE[0], seed=7, config="base"),
             make_report(ROSE_BUT_E_BROKE[1], seed=7, config="cand"))
    result = admit(*pair(), repeat=mixed)
    assert statuses(result)["repeated"] == "fail" and "improved:" in result.clauses[3].detail


# --- CLI ------------------------------------------------------------------------------------

def publish(data: Path, tasks: dict[str, str], **header: Any) -> Path:
    head = make_header(k=max(map(len, tasks.values())), **header)
    records = make_records(tasks, seed=head["seed"])
    return write_report_dir(data, build_report(head, records), records)


def test_cli_exit_0_only_when_admitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main

    dirs = [publish(tmp_path, BETTER, seed=s, config="base") for s in (0, 9)]
    cands = [publish(tmp_path, BEST, seed=s, config="cand") for s in (0, 9)]
    admitted = run_cmd(["lab", "admit", str(dirs[0]), str(cands[0]), str(dirs[1]), cands[1].name], tmp_path)
    assert admitted.returncode == 0, admitted.stdout + admitted.stderr
    assert "verdict: admit" in admitted.stdout
    # In-process: the same entry point's exit code (the real process above and below carries it out).
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert main(["admit", str(dirs[0]), str(cands[0])]) == 1
    partial = capsys.readouterr().out
    assert "not checked" in partial and "verdict: do not admit" in partial


def test_cli_incompatible_pair_exits_3_and_bad_usage_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main

    base = publish(tmp_path, BETTER)
    other = publish(tmp_path, BEST, suite_version="9.0.0", config="cand")
    assert run_cmd(["lab", "admit", str(base), str(other)], tmp_path).returncode == 3
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert main(["admit", str(base)]) == 1  # in-process: a usage error, before any report is read
    assert "expected two or four reports" in capsys.readouterr().err


def test_a_report_without_the_total_falls_back_to_main_loop_tokens() -> None:
    base, cand = pair()
    del base["measured"]["totalTokensPerSuccess"]  # as a report written before the total existed
    tokens = admit(base, cand).clauses[2]
    assert tokens.status == "pass" and tokens.detail.startswith("tokens per success (main loop only) 2000.0 -> 1200.0")
