"""An eval whose finished records are removed while it runs (``doit clean eval …`` from another
shell) publishes no report over them: the report would count finished runs as never attempted."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from lab.build.records import RecordIndex
from tests.helpers.lab_process import BIN, ROOT, run_cmd


def test_the_record_index_names_records_it_saw_that_are_gone(tmp_path: Path) -> None:
    store = tmp_path / "store"
    found, written, never = (store / "runs" / "t" / f"s0-r{i}.json" for i in range(3))
    found.parent.mkdir(parents=True)
    found.write_text("{}")
    index = RecordIndex(store, file=tmp_path / "index.json")
    assert index.facts(found) is not None and index.facts(never) is None
    written.write_text("{}")
    index.written(written)
    assert index.vanished([found, written, never]) == []
    found.unlink()
    written.unlink()
    assert index.vanished([found, written, never]) == [found, written], "a run never recorded is not 'vanished'"


def _suite(root: Path, clean: str) -> Path:
    """One task whose verifier runs the shell command ``clean`` (the second run's removes the
    first run's record)."""
    suite = root / "suite"
    (suite / "fixtures" / "t").mkdir(parents=True)
    (suite / "fixtures" / "t" / "README").write_text("task copy\n")
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t.json").write_text(json.dumps({
        "schemaVersion": 1, "taskId": "t", "description": "answers at once",
        "turns": [{"content": "DONE"}]}))
    (suite / "suite.json").write_text(json.dumps({
        "schemaVersion": 1, "suiteId": "clean-mid-eval", "suiteVersion": "1.0.0",
        "description": "A verifier that cleans the eval it belongs to.",
        "tasks": [{"id": "t", "prompt": "Answer.", "fixture": "fixtures/t",
                   "budget": {"maxTurns": 2, "maxWallMs": 120000, "maxToolCalls": 1},
                   "policy": {"mode": "auto", "allow": ["process"], "readOnly": False},
                   "verifiers": [{"id": "clean", "kind": "command", "timeoutMs": 120000,
                                  "argv": ["sh", "-c", clean]}]}]}))
    return suite


@pytest.mark.slow
def test_doit_clean_during_an_eval_leaves_it_without_a_report(tmp_path: Path) -> None:
    data = tmp_path / "data"
    overrides = ["provider=scripted", "sandbox=none", "trust_local=true", "k=2", "yes=true"]
    suite_path = tmp_path / "suite"
    argv = ["suite=external", f"suite.path={suite_path}", *overrides]
    clean = ["env", f"LAB_DATA_DIR={data}", str(BIN / "doit"), "clean", "eval", *argv]
    _suite(tmp_path, f"cd {shlex.quote(str(ROOT))} && {shlex.join(clean)}")
    result = run_cmd(["doit", "eval", *argv], data)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "were removed while it ran" in result.stderr and "no report published" in result.stderr
    assert list(data.glob("*/*/reports/*/report.json")) == []
