"""A task copy that cannot be removed is one run's infrastructure error; the eval goes on (issue 29).

For real: a ``command`` verifier makes a file of the task copy immutable
(``chattr +i``, sandbox=none) and the lab cannot remove the copy. That run is
``error`` (kind ``workspace``, the message naming the file), the other runs
complete, the report is published, the command ends with a ``run_error``
event and no traceback. ``chattr +i`` holds only for root on a supporting
filesystem; where it does not, the in-process test makes the removal fail at
the boundary of ``remove_workspace`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.build.graph import prepare
from lab.errors import WorkspaceError
from lab.execute.run import execute_run
from tests.helpers.hostile_tree import immutable, release
from tests.helpers.lab_process import command_env, run_script
from tests.helpers.schemas import assert_valid

TASKS = ("a-stuck", "b-plain", "c-plain", "d-plain")


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    (suite / "fixtures" / "copy").mkdir(parents=True)
    (suite / "fixtures" / "copy" / "stuck.txt").write_text("left alone\n")
    (suite / "scripts").mkdir()
    tasks = []
    for task in TASKS:
        verifiers: list[dict[str, Any]] = [{"id": "kept", "kind": "file-contains", "path": "stuck.txt",
                                            "text": "left alone"}]
        if task == "a-stuck":
            verifiers.append({"id": "immutable", "kind": "command", "argv": ["chattr", "+i", "stuck.txt"]})
        tasks.append({"id": task, "prompt": "Answer done.", "fixture": "fixtures/copy",
                      "budget": {"maxTurns": 2, "maxWallMs": 60000},
                      "policy": {"mode": "auto", "allow": [], "readOnly": True}, "verifiers": verifiers})
        (suite / "scripts" / f"{task}.json").write_text(json.dumps(
            {"schemaVersion": 1, "taskId": task, "turns": [{"content": "done"}]}))
    (suite / "suite.json").write_text(json.dumps({
        "schemaVersion": 1, "suiteId": "cleanup-failure", "suiteVersion": "1.0.0",
        "description": "One task's verifier makes its task copy unremovable.", "tasks": tasks}))
    return suite


def _release_all(tmpdir: Path) -> None:
    for path in tmpdir.glob("lab-runs-*/*/*/stuck.txt"):  # <run root>/<task copy>/stuck.txt
        release(path)


@pytest.mark.slow
def test_an_unremovable_task_copy_errors_one_run_and_the_report_is_published(tmp_path: Path) -> None:
    probe = tmp_path / "probe.txt"
    probe.write_text("p")
    if not immutable(probe):
        pytest.skip("chattr +i does not hold here (needs root and ext4/xfs/btrfs); see the in-process test")
    release(probe)
    suite, data, tmpdir = _suite(tmp_path), tmp_path / "data", tmp_path / "tmp"
    tmpdir.mkdir()
    env = command_env()
    env.update(LAB_DATA_DIR=str(data), TMPDIR=str(tmpdir))
    try:
        result = run_script(["lab", "run", "suite=external", f"suite.path={suite}", "provider=scripted", "k=1",
                             "sandbox=none", "trust_local=true", "yes=true"], env=env)
    finally:
        _release_all(tmpdir)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out  # an infrastructure error: exit 1 (SPEC)
    assert "Traceback" not in out and "runs: 4 of 4" in out, out
    records = {}
    for path in data.glob("cleanup-failure/*/runs/*/*.json"):
        record = json.loads(path.read_text())
        assert_valid("run-record", record, str(path))
        records[record["taskId"]] = record
    assert sorted(records) == list(TASKS)
    stuck = records["a-stuck"]
    assert stuck["status"] == "error" and stuck["error"]["kind"] == "workspace"
    assert "cannot remove workspace" in stuck["error"]["message"] and "stuck.txt" in stuck["error"]["message"]
    assert stuck["error"]["verdict"] == "pass"  # what it had been judged before the cleanup failed
    assert all(records[t]["status"] == "pass" for t in TASKS[1:])
    [report_dir] = data.glob("cleanup-failure/*/reports/*")
    report = json.loads((report_dir / "report.json").read_text())
    assert report["summary"]["errors"] == 1
    [history] = data.glob("cleanup-failure/*/history.jsonl")
    events = [json.loads(line) for line in history.read_text().splitlines()]
    assert events[-1]["event"] == "run_error" and events[-1]["exitCode"] == 1


@pytest.mark.slow  # composing the eval's configuration (prepare) takes seconds
def test_a_removal_failure_is_recorded_on_its_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = _suite(tmp_path)
    prep = prepare([f"suite.path={suite}", "suite=external", "provider=scripted", "tasks=[b-plain]", "k=1",
                    "sandbox=none", "trust_local=true", "preflight=false", "yes=true"])
    kept: list[Path] = []

    def refuse(path: Path) -> None:
        # The failure chattr +i gives for real (test above), here for any user and filesystem: the
        # boundary the run's clean-up calls is made to fail as the real removal does.
        kept.append(path)
        raise WorkspaceError(f"cannot remove workspace {str(path)!r} ({path}/stuck.txt): Operation not permitted")

    monkeypatch.setattr("lab.sandbox.workspace.remove_workspace", refuse)
    record = execute_run(prep.ctx, prep.specs[0])  # returns: the error does not escape the run
    assert_valid("run-record", record)
    assert record["status"] == "error" and record["error"]["kind"] == "workspace"
    assert record["error"]["verdict"] == "pass" and "stuck.txt" in record["error"]["message"]
    assert len(kept) == 1
    monkeypatch.undo()
    from lab.sandbox.workspace import remove_workspace

    remove_workspace(kept[0])
