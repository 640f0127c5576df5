"""`lab variants json=true`: stdout is JSON lines only, each with a type (variant_report ×2, comparison)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.build.variants import json_requested
from lab.errors import ConfigError
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid


@pytest.mark.slow
def test_variants_json_prints_one_line_per_variant_and_the_comparison(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = run_cmd(["lab", "variants", "suite=core", "provider=scripted", "variant=baseline,no-compaction",
                      "k=1", "tasks=[edit-file]", "json=true", f"out={out}"], tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["type"], line.get("variant")) for line in lines] == [
        ("variant_report", "baseline"), ("variant_report", "no-compaction"), ("comparison", None)]
    assert all(next(iter(line)) == "schemaVersion" for line in lines)
    for line in lines[:2]:
        assert_valid("report", line["report"], f"variant_report {line['variant']}")
        assert line["report"] == json.loads((Path(line["reportDir"]) / "report.json").read_text())
    assert_valid("comparison", lines[2]["comparison"], "comparison line")
    assert lines[2]["comparison"] == json.loads((out / "comparison.json").read_text())


@pytest.mark.parametrize(("overrides", "wanted"), [([], False), (["json=true"], True), (["json=no"], False),
                                                   (["json=1", "json=false"], False)])
def test_json_flag_values(overrides: list[str], wanted: bool) -> None:
    assert json_requested(overrides) is wanted


def test_a_bad_json_value_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="json must be true or false, got 'maybe'"):
        json_requested(["json=maybe"])
    result = run_cmd(["lab", "variants", "suite=core", "provider=scripted", "variant=baseline,no-compaction",
                      "json=maybe"], tmp_path)
    assert result.returncode == 1 and "json must be true or false" in result.stderr
