"""The shipped `small-context` variant: a lowered context limit compared with the baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.config.compose import compose_config
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid


def test_small_context_lowers_only_the_context_limit() -> None:
    base = compose_config(["suite=long-context-stress", "provider=scripted", "variant=baseline"])
    small = compose_config(["suite=long-context-stress", "provider=scripted", "variant=small-context"])
    assert small.data["agent"]["limits"]["max_context_chars"] == 20000
    assert base.data["agent"]["limits"]["max_context_chars"] == 200000
    assert small.measured_view()["agent"]["limits"] != base.measured_view()["agent"]["limits"]
    assert small.config_hash() != base.config_hash()


@pytest.mark.slow
def test_variants_baseline_against_small_context_runs_and_compares(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = run_cmd(["lab", "variants", "suite=long-context-stress", "provider=scripted",
                      "variant=baseline,small-context", "k=1", "tasks=[paged-report-two-needles]", f"out={out}"],
                     tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    comparison = json.loads((out / "comparison.json").read_text())
    assert_valid("comparison", comparison, "comparison.json")
    assert (comparison["base"]["variant"], comparison["cand"]["variant"]) == ("baseline", "small-context")
    compactions = {}
    for variant in ("baseline", "small-context"):
        records = [json.loads(line) for line in (out / variant / "runs.jsonl").read_text().splitlines()]
        compactions[variant] = sum(r["compactions"] for r in records)
    assert compactions == {"baseline": 0, "small-context": 1}  # the lowered limit is what differs
