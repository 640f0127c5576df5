"""Wall-time deltas are comparable only between runs made with the same jobs on the same machine."""

from __future__ import annotations

from typing import Any

import pytest

from lab.compare.deltas import deltas


def doc(execution: dict[str, Any] | None) -> dict[str, Any]:
    header: dict[str, Any] = {"compaction": {"enabled": True, "threshold": 0.8}}
    if execution is not None:
        header["execution"] = execution
    return {"header": header, "measured": {"wallMsPerSuccess": 1000.0, "tokensPerSuccess": 50.0},
            "summary": {"passes": 1}}


@pytest.mark.parametrize(("base", "cand", "reason"), [
    ({"jobs": 4, "machine": "a"}, {"jobs": 1, "machine": "a"}, "different jobs (base 4, cand 1)"),
    ({"jobs": 1, "machine": "a"}, {"jobs": 1, "machine": "b"}, "different machines"),
    (None, {"jobs": 1, "machine": "a"}, "unknown for base"),
])
def test_wall_time_not_comparable_across_execution_conditions(base: Any, cand: Any, reason: str) -> None:
    out = deltas(doc(base), doc(cand), same_mode=True)
    assert out["wallMsPerSuccess"]["comparable"] is False and reason in out["wallMsPerSuccess"]["reason"]
    assert "delta" not in out["wallMsPerSuccess"]
    assert out["tokensPerSuccess"]["comparable"] is True  # tokens do not depend on jobs or the machine


@pytest.mark.parametrize("execution", [None, {"jobs": 2, "machine": "a"}])
def test_wall_time_comparable_under_the_same_conditions(execution: Any) -> None:
    out = deltas(doc(execution), doc(execution), same_mode=True)
    assert out["wallMsPerSuccess"]["comparable"] is True and out["wallMsPerSuccess"]["delta"] == 0


def test_wall_time_not_comparable_across_sandbox_backends() -> None:
    base, cand = doc({"jobs": 1, "machine": "a"}), doc({"jobs": 1, "machine": "a"})
    base["header"]["sandbox"], cand["header"]["sandbox"] = "none", "bwrap"
    out = deltas(base, cand, same_mode=True)
    assert out["wallMsPerSuccess"]["comparable"] is False
    assert "different sandbox backends (base none, cand bwrap)" in out["wallMsPerSuccess"]["reason"]
    assert out["tokensPerSuccess"]["comparable"] is True


def test_wall_time_not_comparable_across_executors_and_absent_means_local() -> None:
    local, ray = {"jobs": 4, "machine": "a"}, {"jobs": 4, "machine": "a", "executor": "ray"}
    out = deltas(doc(local), doc(ray), same_mode=True)
    assert out["wallMsPerSuccess"]["comparable"] is False
    assert out["wallMsPerSuccess"]["reason"] == "runs made with different executors (base local, cand ray)"
    same = deltas(doc(local), doc({**local, "executor": "local"}), same_mode=True)
    assert same["wallMsPerSuccess"]["comparable"] is True


def test_token_figures_across_compaction_settings_name_the_settings_that_differ_in_json() -> None:
    cand = doc({"jobs": 1, "machine": "a"})
    cand["header"]["compaction"] = {"enabled": False, "threshold": 0.8}
    out = deltas(doc({"jobs": 1, "machine": "a"}), cand, same_mode=True)
    assert out["tokensPerSuccess"]["reason"] == "different compaction settings (enabled: base true, cand false)"
