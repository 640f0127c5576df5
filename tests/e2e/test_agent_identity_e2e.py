"""The command agent is an input, end to end: edit its script and the next ``lab run`` runs it again.

The real ``lab run`` in a subprocess, ``agent=reference`` pointed at a copy of
the probe agent (tests/helpers/probe_agent.py) by an absolute path, behind the
gateway with ``provider=scripted`` (no network).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.execute.test_command_agent_runs import PROBE, TASK, probe_suite
from tests.helpers.lab_process import run_cmd
from tests.helpers.schemas import assert_valid


@pytest.mark.slow
def test_editing_the_agent_script_makes_the_next_run_execute_again(tmp_path: Path) -> None:
    suites = probe_suite(tmp_path)
    script = tmp_path / "agent" / "probe_agent.py"
    script.parent.mkdir()
    shutil.copy(PROBE, script)
    data = tmp_path / "data"
    argv = ["lab", "run", f"suite_dir={suites}", "suite=smoke-coding", "provider=scripted", "agent=reference",
            "agent.name=probe", f'agent.command.argv=["{{python}}","{script}","fresh","{{model}}"]',
            f"tasks=[{TASK}]", "preflight=false", "yes=true", "trust_local=true", "k=1"]

    first = run_cmd(argv, data)
    assert first.returncode in (0, 1), first.stdout + first.stderr  # the probe fixes nothing: a fail
    [record_path] = list(data.glob(f"*/*/runs/{TASK}/*.json"))
    record = json.loads(record_path.read_text())
    assert_valid("run-record", record)
    identity = record["inputs"]["agent"]
    assert identity["name"] == "probe" and len(identity["digest"]) == 64
    assert record["agent"]["digest"] == identity["digest"]
    [report] = list(data.glob("*/*/reports/*/report.json"))
    header = json.loads(report.read_text())["header"]
    assert header["agent"]["digest"] == identity["digest"]
    for page in ("report.md", "index.html"):  # the conditions name the program measured
        assert f"digest {identity['digest'][:12]}" in (report.parent / page).read_text()

    unchanged = run_cmd(argv, data)
    assert "1 run(s) up to date" in unchanged.stdout, unchanged.stdout + unchanged.stderr

    script.write_text(script.read_text() + "\n# edited: another agent\n")
    edited = run_cmd(argv, data)
    assert "up to date" not in edited.stdout, edited.stdout + edited.stderr
    again = json.loads(record_path.read_text())
    assert again["inputs"]["agent"]["digest"] != identity["digest"]
    assert json.loads(report.read_text())["header"]["agent"]["digest"] == again["inputs"]["agent"]["digest"]
