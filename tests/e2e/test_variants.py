"""Variants through the real command: interleaved runs, one report per variant, a comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.build.variants import split_variants
from lab.errors import ConfigError
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid


@pytest.mark.slow
def test_variants_interleave_and_write_reports_and_comparison(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    # Two tasks, k=2: four pairs of runs, each variant first in every other pair.
    result = run_cmd(["lab", "variants", "suite=core", "variant=baseline,no-compaction", "provider=scripted",
                      "k=2", "tasks=[edit-file,delete-file]", f"out={out}"], tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    started = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    started = [(e["variant"], e["taskId"], e["repetition"]) for e in started if e["event"] == "run_started"]
    assert len(started) == 8
    pairs = [started[i:i + 2] for i in range(0, len(started), 2)]
    for j, (first, second) in enumerate(pairs):
        assert first[1:] == second[1:], "both variants run the same task and repetition back to back"
        expected = ("baseline", "no-compaction") if j % 2 == 0 else ("no-compaction", "baseline")
        assert (first[0], second[0]) == expected
    for variant in ("baseline", "no-compaction"):
        report = json.loads((out / variant / "report.json").read_text())
        assert report["header"]["variant"] == variant and report["header"]["k"] == 2
    comparison = json.loads((out / "comparison.json").read_text())
    assert_valid("comparison", comparison, "comparison.json")
    assert (out / "comparison.md").read_text().startswith("#")
    # The console names the variant on each banner and each run line; the provider note comes once.
    lines = result.stdout.splitlines()
    banners = [line for line in lines if line.startswith("variants [")]
    assert [b.split("]")[0] for b in banners] == ["variants [baseline", "variants [no-compaction"]
    assert sum("scripted provider:" in line for line in lines) == 1
    run_lines = [line for line in lines if line.startswith("  ") and (" r0  (" in line or " r1  (" in line)]
    assert len(run_lines) == 8
    assert sorted(line.split()[1] for line in run_lines).count("baseline:") == 4


def test_variants_out_that_cannot_be_a_directory_is_refused_before_any_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    result = run_cmd(["lab", "variants", "suite=core", "variant=baseline,no-compaction", "provider=scripted",
                      f"out={blocker}/cmp"], tmp_path / "runs")
    assert result.returncode == 1
    assert f"variants: out: cannot write the comparison to {blocker}/cmp: {blocker} is not a directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "runs").rglob("runs/*/*.json")), "no run was made"


@pytest.mark.parametrize(("overrides", "message"), [
    (["suite=core"], "exactly one sweep"),
    (["variant=a,b", "provider.model=x,y"], "exactly one sweep"),
    (["compare_key=agent.max_output_tokens"], "give both compare_key"),
])
def test_bad_variant_requests_are_refused(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        split_variants(overrides)


def test_sweep_values_become_variants() -> None:
    common, variants = split_variants(["suite=core", "provider.model=m1,m2", "k=3"])
    assert common == ["suite=core", "k=3"]
    assert variants == [("m1", ["provider.model=m1"]), ("m2", ["provider.model=m2"])]


def test_compare_key_builds_unset_versus_set() -> None:
    common, variants = split_variants(["suite=core", "compare_key=agent.temperature", "compare_value=0.2"])
    assert common == ["suite=core"]
    assert variants == [("unset", []), ("agent.temperature_0.2", ["agent.temperature=0.2"])]


@pytest.mark.parametrize(("overrides", "message"), [
    (["suite=core", "variant=baseline,no-compaction", "mode=replay"], "replay mode is refused"),
    (["suite=core", "variant=baseline,baseline"], "the same measured configuration"),
])
def test_variants_refusals_exit_1_before_any_run(tmp_path: Path, overrides: list[str], message: str) -> None:
    result = run_cmd(["lab", "variants", *overrides], tmp_path)
    assert result.returncode == 1
    assert message in result.stderr
    assert not list(tmp_path.glob("*/*/runs"))


def test_a_sweep_over_an_unmeasured_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="jobs is not part of the measured configuration"):
        split_variants(["suite=core", "jobs=1,2"])
