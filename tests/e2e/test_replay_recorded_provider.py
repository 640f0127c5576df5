"""`doit eval mode=replay cassette_dir=…` replays with the provider and model the cassettes were recorded with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_front_door import report_dir_of
from tests.helpers.lab_process import run_cmd

# One worker builds this module's shared fixture (scope="module") once, instead of each worker that runs one of its tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("replay-recorded-provider")]


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """edit-file of core, recorded with the scripted provider under a model name the replay default lacks."""
    root = tmp_path_factory.mktemp("recorded")
    result = run_cmd(["doit", "record", "suite=core", "tasks=[edit-file]", "provider=scripted",
                      "provider.model=other-model", f"cassette_dir={root / 'cassettes'}"], root / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    cassettes = root / "cassettes"
    assert result.stdout.splitlines()[-1] == (f"cassettes: {cassettes / 'core'} (1 of 1 task(s) recorded; replay "
                                              f"them with mode=replay cassette_dir={cassettes})")
    return cassettes


def test_replay_takes_the_recorded_model_and_says_so(cassettes: Path, tmp_path: Path) -> None:
    result = run_cmd(["doit", "eval", "mode=replay", "suite=core", "tasks=[edit-file]", f"cassette_dir={cassettes}"],
                     tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("replay:")]
    assert said == [f"replay: with scripted/other-model, the provider and model the cassettes in "
                    f"{cassettes / 'core'} were recorded with (provider=/provider.model= choose others)"]
    header = json.loads((report_dir_of(result.stdout) / "report.json").read_text())["header"]
    assert (header["provider"], header["model"]) == ("scripted", "other-model")
    assert "low power" not in result.stdout  # a replay has no intervals


def test_an_explicit_model_wins_and_the_replay_diverges(cassettes: Path, tmp_path: Path) -> None:
    result = run_cmd(["lab", "run", "mode=replay", "suite=core", "tasks=[edit-file]", "provider.model=third-model",
                      f"cassette_dir={cassettes}"], tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("replay:")]
    assert len(said) == 1 and said[0].startswith("replay: provider.model=third-model given, which wins over")
    assert "recorded with scripted/other-model" in said[0]
