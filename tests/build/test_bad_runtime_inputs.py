"""A dependency DB that is not a file and a ``jobs`` past the maximum are one line each (exit 1),
never a traceback: ``.doit.sqlite`` as a directory gave sqlite3's ``unable to open database file``
traceback; ``jobs=100000`` printed the config error and then failed in thread start."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lab.build.cmdline import MAX_JOBS, doit_config
from lab.build.depdb import DataDirError, check_data_dir
from lab.schemas import load_schema
from tests.helpers.lab_process import run_cmd


def _make(kind: str, path: Path) -> None:
    if kind == "a directory":
        path.mkdir()
    elif kind == "a FIFO":
        os.mkfifo(path)
    else:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))


@pytest.mark.parametrize("kind", ["a directory", "a FIFO", "a socket"])
def test_a_dependency_db_that_is_not_a_file_is_one_line(tmp_path: Path, kind: str) -> None:
    _make(kind, tmp_path / ".doit.sqlite")
    with pytest.raises(DataDirError) as info:
        check_data_dir(tmp_path)
    assert str(info.value) == (f"data dir {tmp_path}: .doit.sqlite is {kind}, not the dependency database; "
                               "remove or rename it (the run records keep every result)")


def test_a_dependency_db_that_is_a_link_to_a_file_is_fine(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.sqlite").write_bytes(b"")
    (tmp_path / ".doit.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    check_data_dir(tmp_path)


def test_jobs_past_the_maximum_starts_no_threads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    assert load_schema("config")["properties"]["jobs"]["maximum"] == MAX_JOBS
    assert doit_config({"jobs": str(MAX_JOBS)})["num_process"] == MAX_JOBS
    assert "num_process" not in doit_config({"jobs": "100000"})  # the config check refuses it in one line


@pytest.mark.slow
@pytest.mark.parametrize("case", ["db-directory", "jobs"])
def test_doit_eval_says_one_line_and_exits_1(tmp_path: Path, case: str) -> None:
    argv = ["doit", "eval", "suite=smoke-coding", "mode=replay", "tasks=[rename-symbol]"]
    if case == "db-directory":
        (tmp_path / ".doit.sqlite").mkdir()
    else:
        argv.append("jobs=100000")
    result = run_cmd(argv, tmp_path)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line]
    assert result.returncode == 1 and len(lines) == 1, lines
    assert "Traceback" not in result.stderr and len(lines[0]) < 300
    assert (".doit.sqlite is a directory" if case == "db-directory" else
            "config: jobs: 100000 is greater than the maximum of 256") in lines[0]
