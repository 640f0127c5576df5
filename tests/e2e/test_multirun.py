"""`lab run -m`: a Hydra multirun over the eval, with the basic and the joblib launcher."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lab.build.multirun import combinations
from lab.errors import ConfigError
from tests.helpers.lab_process import ROOT, run_cmd


def test_sweeps_expand_into_every_combination() -> None:
    assert combinations(["suite=core", "k=1,2", "variant=baseline,no-compaction"]) == [
        ["suite=core", "k=1", "variant=baseline"], ["suite=core", "k=1", "variant=no-compaction"],
        ["suite=core", "k=2", "variant=baseline"], ["suite=core", "k=2", "variant=no-compaction"]]
    assert combinations(["k=range(1,3)"]) == [["k=1"], ["k=2"]]


def test_unparseable_sweep_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot parse overrides"):
        combinations(["k=[1"])


@pytest.mark.slow
@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=joblib"]], ids=["basic", "joblib"])
def test_multirun_writes_one_report_per_job(tmp_path: Path, launcher: list[str]) -> None:
    result = run_cmd(["lab", "run", "-m", "suite=core", "mode=replay", "k=1,2", *launcher], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    reports = sorted(p.parent.name for p in tmp_path.glob("core/*/reports/*/report.json"))
    assert [r.rsplit(".", 2)[1:] for r in reports] == [["k1", "s0"], ["k2", "s0"]]
    assert not (ROOT / "multirun.yaml").exists()
    # Each job's output follows its header in one piece, also when joblib runs the jobs at once.
    blocks = result.stdout.split("multirun: job ")[1:]
    headers = sorted(block.splitlines()[0] for block in blocks)
    assert headers == [f"{n} of 2: suite=core mode=replay k={n}" for n in (1, 2)]
    for block in blocks:
        k = block.splitlines()[0][-1]
        assert [line for line in block.splitlines() if line.startswith(("eval core", "report: "))] == [
            f"eval core 1.0.0 · replay · scripted/scripted · k={k} · {5 * int(k)} run(s) · results in {tmp_path}",
            f"report: {next(tmp_path.glob(f'core/*/reports/*.k{k}.s0/report.md'))}"]


@pytest.mark.slow
def test_multirun_exit_code_is_the_worst_job(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    victim = cassettes / "core" / "delete-file.jsonl"
    lines = [json.loads(line) for line in victim.read_text().splitlines()]
    lines[1]["request"]["messages"][1]["content"] += " (edited)"
    victim.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_cmd(["lab", "run", "-m", "suite=core", "mode=replay", f"cassette_dir={cassettes}",
                      "tasks=[edit-file],[delete-file]"], tmp_path / "runs")
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(list((tmp_path / "runs").glob("core/*/reports/*/report.json"))) == 2
