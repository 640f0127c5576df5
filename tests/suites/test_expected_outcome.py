"""Refusal tasks (suite.json ``expectedOutcome``): a give-up is their claimed success (SPEC X2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.errors import SuiteError
from lab.paths import SUITES_DIR
from lab.report import build_report
from lab.report.junit import render_junit
from lab.report.metrics import claimed_success
from lab.suites.load import load_suite
from tests.helpers.lab_process import run_cmd
from tests.helpers.records import make_header, make_record
from tests.helpers.schemas import assert_valid

TASK: dict[str, Any] = {
    "id": "t1", "prompt": "do it", "fixture": "fixtures/t1", "budget": {"maxTurns": 5, "maxWallMs": 1000},
    "policy": {"mode": "auto", "allow": []},
    "verifiers": [{"id": "v1", "kind": "file-contains", "path": "a.txt", "text": "x"}],
}


def write_suite(root: Path, **task_fields: Any) -> Path:
    (root / "fixtures" / "t1").mkdir(parents=True)
    (root / "fixtures" / "t1" / "a.txt").write_text("x\n")
    doc = {"schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0", "description": "d",
           "tasks": [{**copy.deepcopy(TASK), **task_fields}]}
    (root / "suite.json").write_text(json.dumps(doc))
    return root


@pytest.mark.parametrize(("fields", "expected"), [({}, "success"), ({"expectedOutcome": "refusal"}, "refusal"),
                                                  ({"expectedOutcome": "success"}, "success")])
def test_expected_outcome_loads_with_success_as_default(tmp_path: Path, fields: dict[str, str],
                                                         expected: str) -> None:
    assert load_suite(write_suite(tmp_path, **fields)).tasks[0].expected_outcome == expected


def test_an_unknown_expected_outcome_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as info:
        load_suite(write_suite(tmp_path, expectedOutcome="maybe"))
    assert any("tasks[0].expectedOutcome: 'maybe' is not one of" in p for p in info.value.problems)


def test_the_holdout_refusal_task_declares_it() -> None:
    tasks = {t.id: t for t in load_suite(SUITES_DIR / "holdout").tasks}
    assert tasks["refuse-invented-fact"].expected_outcome == "refusal"


@pytest.mark.parametrize(("expected", "claim", "status", "fp", "fn"), [
    ("refusal", "gave_up", "pass", 0, 0),   # the audit's input: a correct give-up was a false negative
    ("refusal", "gave_up", "fail", 1, 0),
    ("refusal", "success", "pass", 0, 1),   # claimed to have found what is not there
    ("success", "gave_up", "pass", 0, 1),
    ("success", "success", "fail", 1, 0),
])
def test_claims_are_read_against_the_expected_outcome(expected: str, claim: str, status: str, fp: int,
                                                      fn: int) -> None:
    record = {**make_record("t", 0, status=status, claim=claim), "expectedOutcome": expected}
    assert_valid("run-record", record, "record")
    doc = build_report(make_header(k=1), [record])
    assert (doc["summary"]["falsePositives"], doc["summary"]["falseNegatives"]) == (fp, fn)
    assert ("false positive" in render_junit(doc, [record])) == bool(fp)


@given(st.sampled_from([None, "success", "refusal"]), st.sampled_from(["success", "gave_up", "none"]))
def test_exactly_one_claim_is_a_claimed_success(expected: str | None, claim: str) -> None:
    record = {"claim": claim} if expected is None else {"claim": claim, "expectedOutcome": expected}
    assert claimed_success(record) == (claim == ("gave_up" if expected == "refusal" else "success"))


# The five chain-walk-rules instances are one generator's output, bundled byte for byte (each one's scripted
# solution passes its verifiers and its fixture fails them: tests/suites/test_long_context_suites.py): the
# reference run takes the first as their representative.
ONE_OF_A_TEMPLATE = {"long-context-stress": {f"chain-walk-rules-{n:02d}" for n in range(2, 6)}}


@pytest.mark.slow
@pytest.mark.parametrize("suite", sorted(p.name for p in SUITES_DIR.iterdir() if (p / "suite.json").exists()))
def test_the_reference_run_of_every_bundled_suite_has_no_false_claims(tmp_path: Path, suite: str) -> None:
    task_ids = [t.id for t in load_suite(SUITES_DIR / suite).tasks if t.id not in ONE_OF_A_TEMPLATE.get(suite, ())]
    result = run_cmd(["lab", "run", f"suite={suite}", "provider=scripted", "k=1", f"out={tmp_path / 'out'}",
                      *([f"tasks=[{','.join(task_ids)}]"] if suite in ONE_OF_A_TEMPLATE else [])], tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert doc["summary"]["passes"] == doc["summary"]["judged"] == doc["summary"]["tasks"] == len(task_ids)
    assert (doc["summary"]["falsePositives"], doc["summary"]["falseNegatives"]) == (0, 0)
