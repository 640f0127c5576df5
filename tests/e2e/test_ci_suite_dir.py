"""`lab ci suite_dir=DIR` and `cassette_dir=DIR` (the latter only with a single suite), SPEC R7."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.lab_process import ROOT, run_cmd

pytestmark = pytest.mark.slow


def copy_suites(root: Path, *names: str, cassettes: bool = False) -> Path:
    """Copies of bundled suites; with ``cassettes`` their recordings beside them (<suite>/cassettes/<id>/)."""
    for name in names:
        shutil.copytree(ROOT / "suites" / name, root / name)
        if cassettes:
            shutil.copytree(ROOT / "cassettes" / name, root / name / "cassettes" / name)
    return root


def test_ci_replays_the_suites_of_a_suite_dir(tmp_path: Path) -> None:
    suites = copy_suites(tmp_path / "suites", "core", "holdout", cassettes=True)
    result = run_cmd(["lab", "ci", f"suite_dir={suites}", "yes=true"], tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    table = result.stdout.split("suite ", 1)[1]
    assert "core" in table and "holdout" in table and "smoke-coding" not in table
    assert "ci: every cassette replays cleanly and passes" in result.stdout


def test_ci_replays_one_suite_of_a_suite_dir_from_a_cassette_dir(tmp_path: Path) -> None:
    suites = copy_suites(tmp_path / "suites", "core")
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "core", cassettes / "core")
    result = run_cmd(["lab", "ci", f"suite_dir={suites}", f"cassette_dir={cassettes}", "yes=true"],
                     tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_suite_dir_suite_is_third_party_and_needs_yes(tmp_path: Path) -> None:
    suites = copy_suites(tmp_path / "suites", "core", cassettes=True)
    result = run_cmd(["lab", "ci", f"suite_dir={suites}"], tmp_path / "runs")
    assert result.returncode == 1
    assert "yes=true" in result.stderr and "Traceback" not in result.stderr
    assert not list((tmp_path / "runs").glob("*/*/runs"))


@pytest.mark.parametrize(("args", "message"), [
    (["cassette_dir=CAS"], "cassette_dir= holds the recordings of a single suite, but 6 suites are selected"),
    (["suite_dir=SUITES", "cassette_dir=CAS", "yes=true"], "but 2 suites are selected"),
    (["suite=nope"], "ci: suite 'nope' not found among the bundled suites"),
    (["suite_dir=EMPTY"], "no suite in it (expected DIR/<suite id>/suite.json)"),
    (["seed=3"], "ci: unknown key 'seed'"),
])
def test_ci_refusals_are_one_line_before_any_run(tmp_path: Path, args: list[str], message: str,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the entry point's refusals (a refusal as a real process: the test above).
    from lab.cli import main

    copy_suites(tmp_path / "suites", "core", "holdout")
    (tmp_path / "empty").mkdir()
    (tmp_path / "cas").mkdir()
    args = [a.replace("SUITES", str(tmp_path / "suites")).replace("EMPTY", str(tmp_path / "empty"))
            .replace("CAS", str(tmp_path / "cas")) for a in args]
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(ROOT)
    assert main(["ci", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not list((tmp_path / "runs").glob("*/*/runs"))


def test_ci_of_one_bundled_suite_with_a_cassette_dir(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "holdout", cassettes / "holdout")
    result = run_cmd(["doit", "ci", "suite=holdout", f"cassette_dir={cassettes}"], tmp_path / "runs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "holdout" in result.stdout and "core " not in result.stdout
