"""A record made from other inputs is not this eval's result, even when the eval is voided before re-running it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd

pytestmark = pytest.mark.slow


def test_a_voided_eval_does_not_report_records_of_an_older_cassette(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "suites" / "core", suites / "core")
    shutil.copytree(ROOT / "cassettes" / "core", suites / "core" / "cassettes" / "core")
    argv = ["lab", "run", f"suite_dir={suites}", "suite=core", "mode=replay", "yes=true"]
    first = run_cmd(argv, tmp_path / "runs")
    assert first.returncode == 0, first.stdout + first.stderr
    cassettes = sorted((suites / "core" / "cassettes" / "core").glob("*.jsonl"))
    for cassette in cassettes:  # every recording changes: no earlier record is current any more
        cassette.write_text("not a cassette\n")
    second = run_cmd(argv, tmp_path / "runs")
    assert second.returncode == 1, second.stdout + second.stderr  # three errors in a row void the eval
    report = json.loads(next((tmp_path / "runs").glob("core/*/reports/*/report.json")).read_text())
    assert report["summary"]["passes"] == 0  # the passes of the old cassettes are not this eval's
    assert report["summary"]["errors"] == 3
