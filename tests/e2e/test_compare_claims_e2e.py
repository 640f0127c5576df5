"""`lab run` → `lab compare` → `lab admit`: no direction below the power threshold or in replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd
from tests.helpers.schemas import assert_valid

CORE = ["suite=core", "provider=scripted", "tasks=[write-new-file,edit-file]"]


@pytest.mark.slow
def test_low_power_live_pair_is_inconclusive_and_not_admitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli import main

    data = tmp_path / "runs"
    # Without the write tools every scripted run fails; with them every run passes: 0/2 -> 2/2 per task.
    weak = run_cmd(["lab", "run", *CORE, "k=2", "agent.tools=[list_dir,read_file]", f"out={tmp_path / 'base'}"],
                   data)
    strong = run_cmd(["lab", "run", *CORE, "k=2", f"out={tmp_path / 'cand'}"], data)
    assert weak.returncode == 0 and strong.returncode == 0, weak.stderr + strong.stderr
    compared = run_cmd(["lab", "compare", str(tmp_path / "base"), str(tmp_path / "cand"),
                        f"out={tmp_path / 'cmp'}"], data)
    assert compared.returncode == 0, compared.stderr
    doc = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert_valid("comparison", doc, "comparison.json")
    assert doc["aggregate"]["verdict"] == "inconclusive"
    assert "Verdict: inconclusive** — low power" in (tmp_path / "cmp" / "comparison.md").read_text()
    # In-process: `lab admit` on the same pair (its exit codes as real processes: tests/compare/test_admit.py).
    monkeypatch.setenv("LAB_DATA_DIR", str(data))
    assert main(["admit", str(tmp_path / "base"), str(tmp_path / "cand")]) == 1
    assert "aggregate verdict inconclusive: low power" in capsys.readouterr().out


@pytest.mark.slow
def test_replay_pair_is_changed_or_unchanged_without_intervals(tmp_path: Path) -> None:
    suites, cassettes, data = tmp_path / "suites", tmp_path / "cassettes", tmp_path / "runs"
    shutil.copytree(ROOT / "suites" / "core", suites / "core")
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    argv = ["lab", "run", f"suite_dir={suites}", *CORE, "mode=replay", f"cassette_dir={cassettes}", "yes=true"]
    assert run_cmd([*argv, f"out={tmp_path / 'base'}"], data).returncode == 0
    suite_json = suites / "core" / "suite.json"  # a stricter check: the replayed answer no longer passes
    suite_json.write_text(suite_json.read_text().replace('"text": "def c_to_f("', '"text": "def c_to_fahr("'))
    # same suiteVersion: refused unless overwrite=true (the base report's copy in out= is what compare reads)
    assert run_cmd([*argv, f"out={tmp_path / 'cand'}", "overwrite=true"], data).returncode == 0
    report = json.loads((tmp_path / "cand" / "report.json").read_text())
    assert report["summary"]["wilson95"] is None and all(t["wilson95"] is None for t in report["tasks"])
    assert "Wilson" not in (tmp_path / "cand" / "report.md").read_text()
    compared = run_cmd(["lab", "compare", str(tmp_path / "base"), str(tmp_path / "cand"),
                        f"out={tmp_path / 'cmp'}"], data)
    assert compared.returncode == 0, compared.stderr
    doc = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert_valid("comparison", doc, "comparison.json")
    assert {t["taskId"]: t["verdict"] for t in doc["tasks"]} == {"edit-file": "unchanged",
                                                                 "write-new-file": "changed"}
    assert doc["aggregate"]["verdict"] == "changed"
    text = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "Wilson" not in text and "regressed" not in text
