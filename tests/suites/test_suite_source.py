"""Selecting suites: bundled, suite_dir, suite.path; third-party confirmation (SPEC S6)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab import paths
from lab.config.compose import compose_config
from lab.errors import ConfigError, SuiteError
from lab.suites import source
from lab.suites.load import load_suite
from lab.suites.source import confirm_third_party, is_third_party, resolve_suite
from tests.helpers.composed import composed
from tests.helpers.lab_process import lab_env, run_script


def write_suite(root: Path, suite_id: str = "ext") -> Path:
    """A one-task third-party suite the scripted provider can run: it answers without tools."""
    suite = root / suite_id
    (suite / "fixtures" / "t1").mkdir(parents=True)
    (suite / "fixtures" / "t1" / "notes.txt").write_text("port 8080\n")
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t1.json").write_text(json.dumps(
        {"schemaVersion": 1, "taskId": "t1", "turns": [{"content": "DONE: the port is 8080."}]}))
    (suite / "suite.json").write_text(json.dumps({
        "schemaVersion": 1, "suiteId": suite_id, "suiteVersion": "0.1.0", "description": "third party",
        "tasks": [{"id": "t1", "prompt": "Which port?", "fixture": "fixtures/t1",
                   "budget": {"maxTurns": 2, "maxWallMs": 60000}, "policy": {"mode": "auto", "allow": []},
                   "verifiers": [{"id": "kept", "kind": "file-contains", "path": "notes.txt", "text": "8080"}]}]}))
    return suite


def run_lab(argv: list[str], data_dir: Path, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    return run_script(argv, env=lab_env(data_dir), stdin=stdin)


def records(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("*/*/runs/*/*.json"))


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite_dir holding only the suite ``ext``, shared by the tests that read it (never changed), so
    ``composed`` composes each override list over it once."""
    root = tmp_path_factory.mktemp("suites")
    write_suite(root)
    return root


@pytest.fixture(autouse=True)
def nothing_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts in a process that has accepted no third-party suite (the tests share ``suites``)."""
    monkeypatch.setattr(source, "_CONFIRMED", set())


# --- locating a suite -----------------------------------------------------------------------

def test_suite_dir_with_an_id_loads_dir_slash_id(suites: Path) -> None:
    config = composed(f"suite_dir={suites}", "suite=ext", "yes=true")
    assert config.data["suite"] == {"id": "ext", "path": None, "k": 5}
    assert resolve_suite(config).path == suites / "ext"


def test_suite_dir_falls_back_to_the_bundled_suite(suites: Path) -> None:
    config = composed(f"suite_dir={suites}", "suite=core")
    assert resolve_suite(config).path == paths.SUITES_DIR / "core"


def test_suite_dir_shadows_a_bundled_suite_of_the_same_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(paths.SUITES_DIR / "core", tmp_path / "core")
    suite = resolve_suite(compose_config([f"suite_dir={tmp_path}", "suite=core", "yes=true"]))
    assert suite.path == tmp_path / "core"
    assert f"warning: suite core ({tmp_path / 'core'}) is not a bundled suite" in capsys.readouterr().err


def test_suite_dir_without_the_suite_names_the_missing_file(suites: Path) -> None:
    with pytest.raises(SuiteError, match=r"suite nope: .*nope/suite.json: no suite.json in this directory"):
        resolve_suite(composed(f"suite_dir={suites}", "suite=nope"))


def test_suite_path_points_anywhere(tmp_path: Path) -> None:
    suite_dir = write_suite(tmp_path / "deep" / "er")
    config = compose_config(["suite=external", f"suite.path={suite_dir}", "yes=true"])
    assert resolve_suite(config).id == "ext"


def test_suite_id_must_match_the_file(tmp_path: Path) -> None:
    write_suite(tmp_path, "ext")
    (tmp_path / "other").symlink_to(tmp_path / "ext")
    with pytest.raises(ConfigError, match=r"suite.id: 'other' selects .* whose suite.json has suiteId 'ext'"):
        resolve_suite(compose_config([f"suite_dir={tmp_path}", "suite=other", "yes=true"]))
    # suite.path under a preset that names another suite: the fix is to select the path itself
    with pytest.raises(ConfigError, match=rf"suiteId 'ext'; select it with suite=external suite.path={tmp_path}/ext "
                                          r"\(or add suite.id=ext\)$"):
        resolve_suite(compose_config([f"suite.path={tmp_path}/ext", "yes=true"]))


def test_bundled_suites_are_not_third_party(tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(paths.SUITES_DIR / "core")
    assert not is_third_party(paths.SUITES_DIR / "core")
    assert not is_third_party(tmp_path / "alias")
    assert is_third_party(paths.SUITES_DIR.parent / f"{paths.SUITES_DIR.name}-evil" / "core")
    assert is_third_party(tmp_path)


def test_a_bundled_suite_asks_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    resolve_suite(composed("suite=core"), stdin=io.StringIO(""))
    assert capsys.readouterr().err == ""


# --- confirmation (in process, with a real pty for the terminal) -----------------------------

def third_party(suites: Path) -> object:
    return composed(f"suite_dir={suites}", "suite=ext")


def test_without_a_terminal_a_third_party_suite_is_refused(suites: Path) -> None:
    err = io.StringIO()
    with pytest.raises(ConfigError, match="no terminal to confirm it; pass yes=true to run it"):
        resolve_suite(third_party(suites), stdin=io.StringIO("y\n"), stderr=err)
    assert "verifier commands are code you have not reviewed" in err.getvalue()


@pytest.mark.parametrize(("answer", "accepted"), [("y", True), ("YES", True), ("n", False), ("", False)])
def test_on_a_terminal_the_user_decides(suites: Path, answer: str, accepted: bool) -> None:
    main, secondary = os.openpty()
    err = io.StringIO()
    with os.fdopen(secondary, "r") as tty, os.fdopen(main, "w"):
        assert tty.isatty()
        if accepted:
            assert resolve_suite(third_party(suites), stdin=tty, stderr=err, ask=lambda: answer).id == "ext"
        else:
            with pytest.raises(ConfigError, match="not confirmed; nothing was run"):
                resolve_suite(third_party(suites), stdin=tty, stderr=err, ask=lambda: answer)
    assert "[y/N]" in err.getvalue()


def test_end_of_input_at_the_question_is_a_no(suites: Path) -> None:
    main, secondary = os.openpty()

    def eof() -> str:
        raise EOFError

    with os.fdopen(secondary, "r") as tty, os.fdopen(main, "w"):
        with pytest.raises(ConfigError, match="not confirmed"):
            resolve_suite(third_party(suites), stdin=tty, stderr=io.StringIO(), ask=eof)


def test_yes_accepts_without_asking_but_still_warns(suites: Path) -> None:
    err = io.StringIO()
    config = composed(f"suite_dir={suites}", "suite=ext", "yes=true")
    suite = resolve_suite(config, stderr=err, stdin=io.StringIO(""))
    assert "warning: suite ext" in err.getvalue() and "[y/N]" not in err.getvalue()
    # Accepted once, the same suite is not asked about again in this process (variants prepare it twice).
    confirm_third_party(suite, yes=False, stdin=io.StringIO(""), stderr=io.StringIO())


# --- real commands -------------------------------------------------------------------------

@pytest.mark.slow
def test_doit_without_a_terminal_refuses(tmp_path: Path, suites: Path) -> None:
    refused = run_lab(["doit", "eval", f"suite_dir={suites}", "suite=ext", "provider=scripted", "k=1"],
                      tmp_path / "runs")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "suite ext: " in refused.stderr and "pass yes=true to run it" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert records(tmp_path / "runs") == []


@pytest.mark.slow
def test_lab_run_on_a_real_terminal_asks_and_runs_when_confirmed(tmp_path: Path, suites: Path) -> None:
    # yes=true runs a third-party suite without asking in real `doit record`/`doit eval` processes in
    # tests/suites/test_third_party_cassettes.py; the answer "n" is read in-process below.
    main, secondary = os.openpty()
    try:
        os.write(main, b"y\n")  # typed ahead; the terminal buffers the line
        result = run_lab(["lab", "run", f"suite_dir={suites}", "suite=ext", "provider=scripted", "k=1"],
                         tmp_path / "runs", stdin=secondary)
    finally:
        os.close(secondary)
        os.close(main)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning: suite ext" in result.stderr
    assert f"Run suite ext 0.1.0 from {suites / 'ext'}? [y/N]" in result.stderr
    assert len(records(tmp_path / "runs")) == 1
    [report] = (tmp_path / "runs").glob("ext/*/reports/*/report.json")
    header = json.loads(report.read_text())["header"]
    assert header["suiteDigest"] == load_suite(suites / "ext").digest


def test_lab_run_on_a_terminal_answered_no_runs_nothing(tmp_path: Path, suites: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # In-process (the entry point with a real pty as stdin): the real `lab run` on a terminal is run above.
    from lab.cli import main as lab_main

    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "runs"))
    main, secondary = os.openpty()
    with os.fdopen(secondary, "r") as tty, os.fdopen(main, "w") as keyboard:
        keyboard.write("n\n")  # typed ahead; the terminal buffers the line
        keyboard.flush()
        monkeypatch.setattr(sys, "stdin", tty)
        code = lab_main(["run", f"suite_dir={suites}", "suite=ext", "provider=scripted", "k=1"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"Run suite ext 0.1.0 from {suites / 'ext'}? [y/N]" in err
    assert "not confirmed; nothing was run" in err and "Traceback" not in err
    assert records(tmp_path / "runs") == []


@pytest.mark.slow
def test_lab_list_shows_suite_dir_suites(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path / "suites"))
    result = run_lab(["lab", "list", f"suite_dir={tmp_path / 'suites'}"], tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    row = next(line.split() for line in result.stdout.splitlines() if line.startswith("ext "))
    assert row == ["ext", "0.1.0", suite.digest[:12], "1", "none", "suite_dir"]
    assert any(line.split()[:1] == ["core"] and line.split()[-1] == "bundled" for line in result.stdout.splitlines())


def test_lab_list_says_when_the_checkout_has_no_suites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli.listing import list_suites

    # The checkout always has suites; point the lab at an empty directory to see the message.
    monkeypatch.setattr(paths, "SUITES_DIR", tmp_path / "empty")
    assert list_suites([]) == 0
    assert capsys.readouterr().out.strip() == f"no bundled suites: {tmp_path / 'empty'} holds no <suite>/suite.json"


def test_lab_list_rejects_a_missing_suite_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli.listing import list_suites

    assert list_suites([f"suite_dir={tmp_path / 'none'}"]) == 1
    assert capsys.readouterr().err.strip() == f"config: suite_dir: {tmp_path / 'none'} is not a directory"


def test_lab_list_marks_an_invalid_suite_and_takes_what_an_earlier_listing_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.cli.listing import list_suites
    from lab.config import cache as config_cache
    from lab.suites import cache as suite_cache

    write_suite(tmp_path)
    write_suite(tmp_path, "broken")
    (tmp_path / "broken" / "suite.json").write_text('{"schemaVersion": 1}')
    composed_now: list[list[str]] = []
    loaded_now: list[Path] = []
    real_compose, real_load = config_cache.compose_config, suite_cache.load_suite

    # Spies around the real functions (no mock): a remembered result is a call that does not happen.
    def compose_spy(overrides: list[str], **kwargs: Any) -> Any:
        composed_now.append(list(overrides))
        return real_compose(overrides, **kwargs)

    def load_spy(path: Path) -> Any:
        loaded_now.append(path)
        return real_load(path)

    monkeypatch.setattr(config_cache, "compose_config", compose_spy)
    monkeypatch.setattr(suite_cache, "load_suite", load_spy)
    bundled = sorted(p.parent for p in paths.SUITES_DIR.glob("*/suite.json"))
    assert list_suites([f"suite_dir={tmp_path}"]) == 0
    first = capsys.readouterr().out
    row = next(line for line in first.splitlines() if line.startswith("broken "))
    assert "invalid" in row and "'suiteId' is a required property" in row
    assert composed_now == [[f"suite_dir={tmp_path}"]]
    assert loaded_now == [*bundled, tmp_path / "broken", tmp_path / "ext"]
    composed_now.clear()
    loaded_now.clear()
    assert list_suites([f"suite_dir={tmp_path}"]) == 0
    assert capsys.readouterr().out == first
    assert composed_now == [] and loaded_now == [tmp_path / "broken"]  # a suite that does not load: read again
