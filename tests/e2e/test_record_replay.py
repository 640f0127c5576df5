"""Recording and replaying through the real commands (SPEC R5, R6, X8)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd
from tests.helpers.schemas import assert_jsonl_valid

pytestmark = pytest.mark.slow


def test_recording_gives_the_bundled_cassettes_and_re_recording_is_byte_identical(tmp_path: Path) -> None:
    # Recorded over a copy of the bundled cassettes (the scripted provider's recordings), then once more.
    # Recording into an empty cassette_dir: tests/e2e/test_ci_recorded_provider.py.
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    argv = ["doit", "record", "suite=core", "provider=scripted", f"cassette_dir={cassettes}"]
    first = run_cmd(argv, tmp_path / "runs1")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "(5 of 5 task(s) recorded;" in first.stdout, first.stdout
    bundled = {p.name: p.read_bytes() for p in (ROOT / "cassettes" / "core").glob("*.jsonl")}
    assert len(bundled) == 5
    assert {p.name: p.read_bytes() for p in (cassettes / "core").glob("*.jsonl")} == bundled
    second = run_cmd(argv, tmp_path / "runs2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "(5 of 5 task(s) recorded;" in second.stdout, second.stdout
    assert {p.name: p.read_bytes() for p in (cassettes / "core").glob("*.jsonl")} == bundled
    for path in (cassettes / "core").glob("*.jsonl"):
        assert_jsonl_valid("cassette", path)
        assert json.loads(path.read_text().splitlines()[0])["recordedAt"].endswith("Z")


def test_replay_never_touches_the_network(tmp_path: Path) -> None:
    # An unreachable endpoint and no API key: replay must not need either.
    result = run_cmd(["doit", "eval", "suite=core", "mode=replay", "provider=openai", "provider.model=scripted",
                      "provider.base_url=http://127.0.0.1:9/v1", "provider.api_key_env=LAB_TEST_NO_SUCH_KEY"],
                     tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(next(tmp_path.glob("core/*/reports/*/report.json")).read_text())
    assert report["summary"]["passes"] == 5


def test_a_different_config_hash_warns_once_per_cassette_and_keep_prints_and_keeps_the_workspace(tmp_path: Path) -> None:
    # One replay with a changed setting and keep=true: the cassette's warning and the kept workspace.
    argv = ["doit", "eval", "suite=core", "mode=replay", "tasks=[edit-file]", "agent.limits.command_timeout_ms=59000",
            "keep=true"]
    result = run_cmd(argv, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count("warning:") == 1
    assert "recorded with config" in result.stderr
    # The warning names the banner's own hash too (replay mode), beside the record-mode one it compares.
    banner_hash = re.search(r"· config ([0-9a-f]{12}) ·", result.stdout)
    assert banner_hash and f"(the banner's config {banner_hash[1]} is the same settings in replay mode)" \
        in result.stderr, result.stdout + result.stderr
    line = next(ln for ln in result.stdout.splitlines() if "workspace kept at" in ln)
    kept = Path(line.split("workspace kept at ", 1)[1].strip())
    assert kept.is_dir() and (kept / "check.py").exists()
    assert kept.is_relative_to(tmp_path)
    # Again: the run is up to date, nothing runs, and the console says how to keep a workspace anyway.
    again = run_cmd(argv, tmp_path)
    assert again.returncode == 0 and "workspace kept at" not in again.stdout, again.stdout + again.stderr
    assert "1 run(s) up to date, not executed again; keep=true keeps the workspaces of executed runs only " \
           "(add force=true to run them again)" in again.stdout


def test_a_cassette_recorded_with_other_grants_or_of_another_task_is_refused(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    shutil.copy(cassettes / "core" / "edit-file.jsonl", cassettes / "core" / "delete-file.jsonl")
    path = cassettes / "core" / "edit-file.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["policy"]["allow"] = ["external", "process", "write"]  # recorded with grants this run lacks
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    result = run_cmd(["doit", "eval", "suite=core", "mode=replay", "tasks=[edit-file,delete-file]",
                      f"cassette_dir={cassettes}"], tmp_path / "runs")
    assert result.returncode == 1, result.stdout + result.stderr
    [grants] = [ln for ln in result.stdout.splitlines() if ln.startswith("error: task edit-file")]
    assert "replay needs the recording's grants" in grants and "edit-file.jsonl" in grants
    assert "header taskId is 'edit-file', expected 'delete-file'" in result.stdout


def test_ci_fails_when_a_recorded_suite_lacks_a_cassette(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    (cassettes / "core" / "edit-file.jsonl").unlink()
    result = run_cmd(["doit", "ci", "suite=core", f"cassette_dir={cassettes}"], tmp_path / "runs")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "edit-file" in result.stdout and "no cassette for this task" in result.stdout


def test_replay_of_a_suite_without_cassettes_stops_before_any_run(tmp_path: Path) -> None:
    result = run_cmd(["doit", "eval", "suite=long-context", "mode=replay"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().startswith("replay: no cassettes for suite long-context in ")
    assert not list(tmp_path.glob("*/*/runs"))


def test_replay_of_a_dir_with_only_a_command_agents_recordings_names_the_agent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: `lab run mode=replay` of a `doit record agent=reference` dir without agent=.
    from lab.cli import main

    recorded = tmp_path / "cassettes" / "smoke-coding" / "agents" / "reference"
    recorded.mkdir(parents=True)
    (recorded / "edit-file.jsonl").write_text("{}\n", encoding="utf-8")
    code = main(["run", "suite=smoke-coding", "mode=replay", f"cassette_dir={tmp_path / 'cassettes'}"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and err.startswith("replay: no cassettes for suite smoke-coding in "), err
    assert err.endswith("that dir holds recordings of the command agent reference: replay them with agent=reference"), err
