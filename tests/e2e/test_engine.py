"""The run engine through the real `doit` command: cancellation, voiding, jobs, progress, json."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers.lab_process import BIN, ROOT, command_env, run_cmd, run_script, start_script

pytestmark = pytest.mark.slow
UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def records(data_dir: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in data_dir.glob("*/*/runs/*/*.json")}


# Three tasks, k=3 (9 runs): the signal comes after the third run finished, so runs are still pending.
# Both signals are checked for exit 130, nothing published and no task copy left; resuming after the
# interrupt reads the records, not the signal, so only the SIGINT case runs the eval again.
INTERRUPTED = ["suite=smoke-coding", "provider=scripted", "tasks=[fix-default-argument,rename-symbol,add-function-docstring]",
               "k=3"]
PLANNED = 9


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_mid_eval_exits_130_publishes_nothing_and_resumes(tmp_path: Path, signum: int) -> None:
    env = command_env()
    env["LAB_DATA_DIR"] = str(tmp_path)
    temp = tmp_path / "tmp"  # the process's temp root (its task copies) must be gone after the interrupt
    temp.mkdir()
    env["TMPDIR"] = str(temp)
    proc = start_script(["doit", "eval", *INTERRUPTED, "progress=true"], env=env)
    finished = 0
    for line in proc.stderr:  # lifecycle events arrive as the runs finish (warnings are plain lines)
        if line.startswith("{") and json.loads(line)["event"] == "run_finished":
            finished += 1
        if finished == 3:
            proc.send_signal(signum)
            break
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert [p.name for p in temp.glob("lab-runs-*/*")] == [], "no task copy or temp root left behind"
    assert not list(tmp_path.glob("*/*/reports/*"))
    kept = records(tmp_path)
    assert 3 <= len(kept) < PLANNED
    events = [json.loads(x) for x in (next(tmp_path.glob("*/*/history.jsonl"))).read_text().splitlines()]
    assert any(e["event"] == "run_cancelled" for e in events)
    if signum != signal.SIGINT:
        return
    # The same command in the same environment (TMPDIR too: the sandbox backend a command can use depends
    # on where its temp root is, and the backend is a run input).
    again = run_script(["doit", "eval", *INTERRUPTED, "progress=true"], env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    # Every kept result is reused; a run the signal caught mid-command may have ended as an
    # infrastructure error, and those run again (docs/faults.md).
    results = [p for p in kept if json.loads(p.read_text())["status"] in ("pass", "fail", "budget_exceeded")]
    assert f"{len(results)} run(s) up to date" in again.stdout, (again.stdout, [p.read_text()[:300] for p in kept])
    after = records(tmp_path)
    assert len(after) == PLANNED
    assert all(after[p] == mtime for p, mtime in kept.items())


def test_three_infrastructure_errors_in_a_row_void_the_eval(tmp_path: Path) -> None:
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "k=1", "provider=openai",
                      "provider.base_url=http://127.0.0.1:9/v1", "provider.max_retries=0",
                      "provider.api_key_env=LAB_TEST_NO_SUCH_KEY", "preflight=false"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(next(tmp_path.glob("*/*/reports/*/report.json")).read_text())
    assert report["header"]["voided"] is True
    assert result.stdout.count("eval voided: three infrastructure errors in a row") == 1, result.stdout
    assert "the eval was voided after three infrastructure errors in a row" in result.stdout
    assert report["header"]["runsRequested"] == 7
    assert report["summary"]["runs"] == 3
    assert report["summary"]["errors"] == 3
    events = [json.loads(x) for x in next(tmp_path.glob("*/*/history.jsonl")).read_text().splitlines()]
    assert sum(e["event"] == "run_not_run" for e in events) == 4
    assert any(e["event"] == "eval_voided" for e in events)


def _statuses(data_dir: Path) -> list[tuple[str, int, str]]:
    doc = json.loads(next(data_dir.glob("*/*/reports/*/report.json")).read_text())
    return [(r["taskId"], r["repetition"], r["status"]) for r in doc["runs"]]


def test_jobs_give_the_same_report_as_one_at_a_time(tmp_path: Path) -> None:
    # Two tasks, k=2: four runs that jobs=4 starts at once and that finish in any order.
    argv = ["doit", "eval", "suite=core", "mode=replay", "tasks=[edit-file,delete-file]", "k=2"]
    one = run_cmd(argv, tmp_path / "one")
    many = run_cmd([*argv, "jobs=4"], tmp_path / "many")
    assert one.returncode == many.returncode == 0, many.stdout + many.stderr
    assert _statuses(tmp_path / "one") == _statuses(tmp_path / "many")
    assert len(_statuses(tmp_path / "many")) == 4


def test_progress_streams_versioned_events_to_stderr_and_json_a_line_per_run_to_stdout(tmp_path: Path) -> None:
    # One command: the event stream (stderr) and the JSON lines (stdout) are separate outputs of the same eval.
    result = run_cmd(["doit", "eval", "suite=core", "mode=replay", "tasks=[edit-file,delete-file]", "progress=true",
                      "json=true"], tmp_path)
    assert result.returncode == 0, result.stderr
    # Events are JSON lines; a warning (e.g. the reaper's line about an earlier lab) is a plain line.
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert {e["event"] for e in events} >= {"eval_started", "run_started", "run_finished", "report_written"}
    for event in events:
        assert event["schema"] == "lab.event.v1"
        assert UTC.match(event["ts"])
        assert event["suiteId"] == "core" and len(event["configHash"]) == 64
    finished = [e for e in events if e["event"] == "run_finished"]
    assert len(finished) == 2 and all(e["status"] == "pass" and "taskId" in e for e in finished)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 3
    assert all(line["status"] == "pass" for line in lines[:2])
    assert lines[-1]["schemaVersion"] == 1 and lines[-1]["header"]["suiteId"] == "core"


def test_ci_replays_every_bundled_suite_and_counts_up_to_date_runs_per_suite(tmp_path: Path) -> None:
    result = run_cmd(["lab", "ci", f"out={tmp_path / 'out'}"], tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    for suite in (ROOT / "suites").iterdir():
        if (suite / "suite.json").exists():
            assert re.search(rf"^{re.escape(suite.name)}\s", result.stdout, re.M), suite.name
    for suite in (ROOT / "cassettes").iterdir():
        assert (tmp_path / "out" / suite.name / "report.json").exists()
        assert (tmp_path / "out" / suite.name / "report.md").exists()
    # The same command again (its configuration remembered; that out= leaves the runs up to date:
    # tests/e2e/test_eval_replay.py::test_out_gets_the_report_also_when_it_was_up_to_date).
    again = run_cmd(["lab", "ci", f"out={tmp_path / 'out'}"], tmp_path / "runs")
    assert again.returncode == 0, again.stdout + again.stderr
    counts = sorted(int(line.split()[0]) for line in again.stdout.splitlines() if "run(s) up to date" in line)
    recorded = sorted(len(list(d.glob("*.jsonl"))) for d in (ROOT / "cassettes").iterdir())
    assert counts == recorded  # each suite's own count, not a running total


def test_editing_a_tool_description_in_the_harness_fails_ci_naming_the_field(tmp_path: Path) -> None:
    # A fresh interpreter on a copy of the checkout (the fork server's lab is the unedited one). The copy keeps
    # the bytecode cache: Python compiles again only the edited file, whose size and time no longer match.
    copy = tmp_path / "checkout"
    for name in ("lab", "conf", "suites", "cassettes"):
        shutil.copytree(ROOT / name, copy / name)
    shutil.copy(ROOT / "dodo.py", copy / "dodo.py")
    tools = copy / "lab" / "agents" / "builtin" / "tools.py"
    text = tools.read_text()
    edited = text.replace('Tool("read_file", "Read a text file.', 'Tool("read_file", "Carefully read a text file.', 1)
    assert edited != text, "could not find the read_file tool description"
    tools.write_text(edited)
    env = command_env()
    env["LAB_DATA_DIR"] = str(tmp_path / "runs")
    # One suite's replays: every recorded request carries the tool descriptions.
    result = subprocess.run([str(BIN / "python"), "-m", "doit", "ci", "suite=core"], cwd=copy, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "tools[read_file].description" in result.stdout
