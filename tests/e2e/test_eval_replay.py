"""The main job end to end: `doit eval … mode=replay` as a user runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd

# One worker builds this module's shared fixture (scope="module") once, instead of each worker that runs one of its tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("eval-replay")]


def records_of(data_dir: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in data_dir.glob("*/*/runs/*/*.json")}


def report_of(stdout: str) -> Path:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("report: "))
    return Path(line.removeprefix("report: ")).parent


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One `doit eval suite=smoke-coding mode=replay` (its run store, its output), shared by the tests
    that run a command over it and check that nothing executes again."""
    data = tmp_path_factory.mktemp("replayed")
    return data, run_cmd(["doit", "eval", "suite=smoke-coding", "mode=replay"], data)


def test_replay_passes_states_conditions_and_reruns_nothing(
        replayed: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp_path, first = replayed
    assert first.returncode == 0, first.stdout + first.stderr
    report = json.loads((report_of(first.stdout) / "report.json").read_text())
    header = report["header"]
    assert header["mode"] == "replay" and "says nothing about model quality" in header["note"]
    for key in ("suiteId", "suiteVersion", "suiteDigest", "harnessVersion", "harnessDigest",
                "configHash", "provider", "model", "k", "seed"):
        assert header[key] not in (None, ""), key
    assert report["summary"]["passes"] == report["summary"]["runs"] == len(report["tasks"]) >= 3
    assert "replay" in (report_of(first.stdout) / "report.md").read_text()
    before = records_of(tmp_path)
    second = run_cmd(["doit", "eval", "suite=smoke-coding", "mode=replay"], tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert records_of(tmp_path) == before
    assert not any(line.startswith(".  eval:smoke-coding") and not line.endswith((".report", ".summary"))
                   for line in second.stdout.splitlines())


def test_unknown_key_is_one_clear_line(tmp_path: Path) -> None:
    result = run_cmd(["doit", "eval", "kk=3"], tmp_path)
    assert result.returncode != 0
    output = (result.stdout + result.stderr).strip()
    assert "unknown key 'kk'" in output
    assert "Traceback" not in output
    assert len(output.splitlines()) == 1


EDITS = {
    "messages[1].content": lambda req: req["messages"][1].update(content=req["messages"][1]["content"] + " Also."),
    "tools[read_file].description": lambda req: next(
        t for t in req["tools"] if t["function"]["name"] == "read_file")["function"].update(description="Reads a file."),
}


def test_edited_recording_diverges_with_exit_2_and_the_field(tmp_path: Path) -> None:
    # Two tasks, each with its own edited recording: the divergence and its report are per task.
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "smoke-coding", cassettes / "smoke-coding")
    victims = dict(zip(EDITS, sorted((cassettes / "smoke-coding").glob("*.jsonl"))[:2]))
    for field, victim in victims.items():
        lines = [json.loads(line) for line in victim.read_text().splitlines()]
        EDITS[field](lines[1]["request"])
        victim.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "mode=replay",
                      f"tasks=[{','.join(v.stem for v in victims.values())}]", f"cassette_dir={cassettes}"],
                     tmp_path / "runs")
    assert result.returncode == 2, result.stdout + result.stderr
    for field, victim in victims.items():
        assert f"call 0: request differs at {field}" in result.stdout
        assert victim.stem in result.stdout
        assert any(victim.stem in line and f"call 0: request differs at {field}" in line
                   for line in result.stdout.splitlines()), (field, result.stdout)
    assert "report: " in result.stdout


def test_lab_run_is_the_same_graph(replayed: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp_path, first = replayed
    assert first.returncode == 0
    before = records_of(tmp_path)
    again = run_cmd(["lab", "run", "suite=smoke-coding", "mode=replay"], tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert records_of(tmp_path) == before
    assert report_of(again.stdout) == report_of(first.stdout)


def test_k_three_writes_three_runs_per_task_and_every_file_matches_its_schema(tmp_path: Path) -> None:
    from tests.helpers.schemas import assert_jsonl_valid, assert_valid

    # Two tasks: three runs of each, every record and the report checked against their schemas.
    result = run_cmd(["doit", "eval", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol,off-by-one-hidden]",
                      "k=3"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report_dir = report_of(result.stdout)
    report = json.loads((report_dir / "report.json").read_text())
    assert report["header"]["k"] == 3 and len(report["tasks"]) == 2
    assert all(t["runs"] == 3 for t in report["tasks"])
    assert_valid("report", report, "report.json")
    assert_jsonl_valid("run-record", report_dir / "runs.jsonl")
    records = list(tmp_path.glob("*/*/runs/*/*.json"))
    assert len(records) == 3 * len(report["tasks"])
    for record in records:
        assert_valid("run-record", json.loads(record.read_text()), str(record))
    for cassette in (ROOT / "cassettes").glob("*/*.jsonl"):
        assert_jsonl_valid("cassette", cassette)


def test_out_gets_the_report_also_when_it_was_up_to_date(
        replayed: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    data, first = replayed
    assert first.returncode == 0
    runs = len(records_of(data))
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    again = run_cmd(["doit", "eval", "suite=smoke-coding", "mode=replay", f"out={out}"], data)
    assert f"{runs} run(s) up to date" in again.stdout, again.stdout
    assert again.returncode == 0, again.stdout + again.stderr
    assert {"report.json", "report.md", "runs.jsonl", "events.jsonl", "index.html", "junit.xml"} <= {
        p.name for p in out.iterdir()}
    assert (out / "mine.txt").read_text() == "keep me"
    assert again.stdout.splitlines()[-1] == f"out: {out} (a copy of the report's files)"


def test_out_that_cannot_be_a_directory_is_refused_before_any_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    result = run_cmd(["doit", "eval", "suite=core", "mode=replay", f"out={blocker}"], tmp_path / "runs")
    assert result.returncode == 1
    assert result.stderr.strip() == (f"config: out: cannot write the report to {blocker}: "
                                     f"{blocker} is not a directory")
    made = [p for p in (tmp_path / "runs").rglob("*.json") if ".cache" not in p.parts]  # .cache: what it remembers
    assert not made, "no run was made"


def test_why_out_cannot_be_a_directory(tmp_path: Path) -> None:
    # In-process: the reason the command above prints after "cannot write the report to OUT: ", for a path
    # below a file and for /proc, a directory that passes os.access even for root, yet refuses every new entry.
    from lab.files import unwritable_dir_reason

    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    assert unwritable_dir_reason(blocker) == unwritable_dir_reason(blocker / "reports" / "latest") == \
        f"{blocker} is not a directory"
    assert unwritable_dir_reason(Path("/proc/lab-no-such-dir")).startswith("/proc is not writable: making a directory there failed (")  # type: ignore[union-attr]
    assert unwritable_dir_reason(tmp_path / "new" / "dir") is None
    assert not (tmp_path / "new").exists()
