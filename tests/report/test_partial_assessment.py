"""A partially assessed run keeps its valid verifier observations (SPEC M7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lab.report import build_report
from tests.helpers.lab_process import ROOT, run_cmd
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid


def test_an_errored_runs_passing_verifier_is_counted() -> None:
    partial = make_record("t", 0, status="error", verdicts=[("ok", "pass"), ("broken", "error")],
                          error={"kind": "verifier", "message": "verifier broken: cannot start"})
    doc = build_report(make_header(k=1), [partial])
    rep = doc["repetition"]
    assert (rep["assessed"], rep["invalid"], rep["resolved"], rep["scoreMean"]) == (0, 1, 0, None)
    assert rep["verifiers"] == [{"taskId": "t", "verifierId": "ok", "passed": 1, "assessed": 1}]


@pytest.mark.slow
def test_a_verifier_that_cannot_start_keeps_the_others_observations(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "suites" / "core", suites / "core")
    suite_json = suites / "core" / "suite.json"
    suite = json.loads(suite_json.read_text())
    task = next(t for t in suite["tasks"] if t["id"] == "write-new-file")
    checks = next(v for v in task["verifiers"] if v["id"] == "checks")
    checks["argv"] = ["no-such-program-for-this-lab-test"]
    suite_json.write_text(json.dumps(suite))
    result = run_cmd(["lab", "run", f"suite_dir={suites}", "suite=core", "provider=scripted", "k=1",
                      "tasks=[write-new-file]", "yes=true", f"out={tmp_path / 'out'}"], tmp_path / "runs")
    assert result.returncode == 1, result.stderr  # an errored run is an infrastructure error
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert_valid("report", doc, "report.json")
    rep = doc["repetition"]
    assert (rep["assessed"], rep["invalid"], rep["resolved"], rep["scoreMean"]) == (0, 1, 0, None)
    counted = {v["verifierId"]: (v["passed"], v["assessed"]) for v in rep["verifiers"]}
    assert "checks" not in counted
    assert counted["defines-c-to-f"] == (1, 1) and counted["defines-f-to-c"] == (1, 1)
