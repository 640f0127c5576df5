"""`lab ci` replays a suite with the provider and model its cassettes were recorded with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.build.ci import recorded_provider
from lab.errors import ConfigError
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.lab_process import command_env, run_cmd, run_script
from tests.helpers.openai_stub import ScriptedStub, Turn

pytestmark = pytest.mark.slow


def _record(argv: list[str], data: Path, **env: str) -> None:
    full = command_env()
    full.update(env, LAB_DATA_DIR=str(data))
    result = run_script(argv, env=full)
    assert result.returncode in (0, 1), result.stdout + result.stderr


def test_ci_replays_a_suite_recorded_with_another_model(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    _record(["doit", "record", "suite=core", "provider=scripted", "provider.model=other-model",
             f"cassette_dir={cassettes}"], tmp_path / "rec")
    result = run_cmd(["lab", "ci", "suite=core", f"cassette_dir={cassettes}"], tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every cassette replays cleanly and passes" in result.stdout


def test_ci_replays_a_suite_recorded_against_an_openai_compatible_server(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with LocalHTTPServer() as server:
        server.handler = ScriptedStub([Turn(text="I will not change anything.")])
        _record(["doit", "record", "suite=core", "tasks=[edit-file]", "provider=openai", "preflight=false",
                 "provider.model=stub-model", f"cassette_dir={cassettes}"], tmp_path / "rec",
                OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="sk-test-dummy")
    header = json.loads((cassettes / "core" / "edit-file.jsonl").read_text().splitlines()[0])
    assert (header["provider"], header["model"]) == ("openai", "stub-model")
    result = run_cmd(["lab", "ci", "suite=core", f"cassette_dir={cassettes}"], tmp_path / "runs")
    # The recorded answer changes nothing, so the task fails (exit 1), but the replay matches: no divergence (2).
    assert result.returncode == 1, result.stdout + result.stderr
    assert "diverged" not in result.stdout and "OPENAI_API_KEY" not in result.stderr


def test_cassettes_of_two_models_in_one_suite_are_refused_by_name(tmp_path: Path) -> None:
    suite = tmp_path / "core"
    suite.mkdir()
    for name, model in (("a.jsonl", "m1"), ("b.jsonl", "m2"), ("c.jsonl", "m1")):
        (suite / name).write_text(json.dumps({"type": "header", "provider": "scripted", "model": model}) + "\n")
    (suite / "d.jsonl").write_text("not json\n")  # unreadable headers are left to the replay to report
    with pytest.raises(ConfigError, match=r"a\.jsonl with scripted/m1, b\.jsonl with scripted/m2"):
        recorded_provider(suite)
    (suite / "b.jsonl").unlink()
    assert recorded_provider(suite) == ["provider=scripted", "provider.model=m1"]
    assert recorded_provider(tmp_path / "none") == []
