"""A provider that reports usage on some turns only: token figures omitted, the run marked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd

pytestmark = pytest.mark.slow


def test_usage_on_some_turns_only_omits_the_token_figures(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "suites" / "core", suites / "core")
    script_path = suites / "core" / "scripts" / "edit-file.json"
    script = json.loads(script_path.read_text())
    script["turns"][1]["reportUsage"] = False  # the second turn arrives without usage
    script_path.write_text(json.dumps(script))
    result = run_cmd(["doit", "eval", f"suite_dir={suites}", "suite=core", "provider=scripted", "k=1", "yes=true",
                      "tasks=[edit-file,write-new-file]"], tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(next((tmp_path / "runs").glob("core/*/reports/*/report.json")).read_text())
    measured = report["measured"]
    assert measured["usageIncomplete"] is True
    assert measured["runsMissingUsage"] == [{"taskId": "edit-file", "repetition": 0}]
    for key in ("inputTokens", "outputTokens", "tokensPerAttempt", "tokensPerSuccess"):
        assert key not in measured, key  # absent, never 0 and never guessed
    record = json.loads(next((tmp_path / "runs").glob("core/*/runs/edit-file/*.json")).read_text())
    assert record["usage"] is None
    assert [i["kind"] for i in record["incidents"]].count("usage_unreported") == 1
    markdown = (next((tmp_path / "runs").glob("core/*/reports/*")) / "report.md").read_text()
    assert "Token figures omitted: 1 of 2 judged runs did not report usage (edit-file r0)." in markdown
