"""Symlinks and special files in a suite, with real links in tmp_path (SPEC S3)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.errors import SuiteError
from lab.suites.load import load_suite

DOC: dict[str, Any] = {
    "schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0", "description": "d",
    "tasks": [{"id": name, "prompt": "p", "fixture": f"fixtures/{name}",
               "budget": {"maxTurns": 1, "maxWallMs": 1000}, "policy": {"mode": "auto"},
               "verifiers": [{"id": "v", "kind": "file-absent", "path": "x"}]} for name in ("t1", "t2")],
}
ESCAPES = "symlink resolves outside the suite directory"


def make(root: Path, doc: dict[str, Any] = DOC) -> Path:
    for name in ("t1", "t2"):
        (root / "fixtures" / name).mkdir(parents=True, exist_ok=True)
        (root / "fixtures" / name / "a.txt").write_text(name)
    (root / "suite.json").write_text(json.dumps(doc))
    return root


def problems(suite_dir: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(suite_dir)
    return info.value.problems[1:]


def test_absolute_link_out_of_a_fixture_names_the_task(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "fixtures" / "t1" / "escape").symlink_to(tmp_path)
    assert problems(suite) == [f"suite demo: task t1: tasks[0].fixture: fixtures/t1/escape: {ESCAPES}"]


def test_relative_link_climbing_out_is_rejected(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (tmp_path / "secret.txt").write_text("s")
    (suite / "fixtures" / "t2" / "peek").symlink_to("../../../secret.txt")
    assert problems(suite) == [f"suite demo: task t2: tasks[1].fixture: fixtures/t2/peek: {ESCAPES}"]


def test_link_outside_any_fixture_names_the_file(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "scripts").mkdir()
    (suite / "scripts" / "t1.json").symlink_to("/etc/hostname")
    assert problems(suite) == [f"suite demo: scripts/t1.json: {ESCAPES}"]


def refused(suite_dir: Path) -> list[str]:
    """The problems of a suite refused before its suite.json is parsed (a single line)."""
    with pytest.raises(SuiteError) as info:
        load_suite(suite_dir)
    return info.value.problems


def test_suite_json_linked_from_outside_is_refused_unread(tmp_path: Path) -> None:
    make(tmp_path / "suite")
    real = tmp_path / "real.json"
    (tmp_path / "suite" / "suite.json").rename(real)
    (tmp_path / "suite" / "suite.json").symlink_to(real)
    assert refused(tmp_path / "suite") == [
        f"suite suite: {tmp_path / 'suite' / 'suite.json'}: is a symbolic link; suite.json must be a regular file "
        "in the suite directory, not a link"]


def test_suite_json_linked_inside_the_suite_is_refused_too(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "suite.json").rename(suite / "real.json")
    (suite / "suite.json").symlink_to("real.json")
    assert refused(suite) == [f"suite suite: {suite / 'suite.json'}: is a symbolic link; suite.json must be a "
                              "regular file in the suite directory, not a link"]


def test_suite_json_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "suite.json").unlink()
    os.mkfifo(suite / "suite.json")
    # In a child process: a reader that waited for a writer would never return.
    code = ("import sys; from pathlib import Path; from lab.errors import SuiteError; "
            "from lab.suites.load import load_suite\n"
            "try:\n    load_suite(Path(sys.argv[1]))\nexcept SuiteError as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", code, str(suite)], capture_output=True, text=True, timeout=120)
    assert done.stdout == (f"suite suite: {suite / 'suite.json'}: not a regular file (FIFO, socket or device); "
                           "suite.json must be a regular file\n"), done.stderr


def test_suite_json_that_is_a_directory_cannot_be_read(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "suite.json").unlink()
    (suite / "suite.json").mkdir()
    assert refused(suite) == [f"suite suite: {suite / 'suite.json'}: cannot be read: Is a directory"]


def test_link_into_a_sibling_fixture_escapes_the_task_copy(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "fixtures" / "t1" / "other").symlink_to("../t2/a.txt")
    assert problems(suite) == [
        "suite demo: task t1: tasks[0].fixture: fixtures/t1/other: symlink '../t2/a.txt' must be relative "
        "and stay inside fixture 'fixtures/t1' (the task copy keeps links as links)"]


def test_absolute_link_inside_its_own_fixture_is_rejected(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    target = suite / "fixtures" / "t1" / "a.txt"
    (suite / "fixtures" / "t1" / "abs").symlink_to(target)
    assert problems(suite) == [
        f"suite demo: task t1: tasks[0].fixture: fixtures/t1/abs: symlink {str(target)!r} must be relative "
        "and stay inside fixture 'fixtures/t1' (the task copy keeps links as links)"]


def test_relative_link_inside_its_fixture_is_fine(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "fixtures" / "t1" / "sub").mkdir()
    (suite / "fixtures" / "t1" / "sub" / "link").symlink_to("../a.txt")
    assert load_suite(suite).tasks[0].id == "t1"


def test_fixture_that_is_a_link_to_outside_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    suite = make(tmp_path / "suite")
    (suite / "fixtures" / "t3").symlink_to(outside)
    doc = copy.deepcopy(DOC)
    doc["tasks"][1]["fixture"] = "fixtures/t3"
    (suite / "suite.json").write_text(json.dumps(doc))
    assert problems(suite) == [
        "suite demo: task t2: tasks[1].fixture: fixture 'fixtures/t3' resolves outside the suite directory",
        f"suite demo: fixtures/t3: {ESCAPES}"]


def test_sibling_prefix_directory_is_outside(tmp_path: Path) -> None:
    (tmp_path / "ab").mkdir()
    suite = make(tmp_path / "a")
    (suite / "fixtures" / "t1" / "near").symlink_to(tmp_path / "ab")
    assert problems(suite) == [f"suite demo: task t1: tasks[0].fixture: fixtures/t1/near: {ESCAPES}"]


def test_link_loop_is_rejected(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "fixtures" / "t1" / "x").symlink_to("y")
    (suite / "fixtures" / "t1" / "y").symlink_to("x")
    assert problems(suite) == [
        "suite demo: task t1: tasks[0].fixture: fixtures/t1/x: symlink loop or unreadable symlink",
        "suite demo: task t1: tasks[0].fixture: fixtures/t1/y: symlink loop or unreadable symlink"]


def test_fifo_in_a_fixture_is_rejected(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    os.mkfifo(suite / "fixtures" / "t2" / "pipe")
    assert problems(suite) == [
        "suite demo: task t2: tasks[1].fixture: fixtures/t2/pipe: not a regular file or directory "
        "(FIFO, socket or device)"]


def test_suite_reached_through_a_link_loads(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (tmp_path / "alias").symlink_to(suite)
    loaded = load_suite(tmp_path / "alias")
    assert loaded.digest == load_suite(suite).digest


def test_digest_counts_a_link_by_its_target_text(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite")
    (suite / "fixtures" / "t1" / "link").symlink_to("a.txt")
    before = load_suite(suite).digest
    (suite / "fixtures" / "t1" / "link").unlink()
    (suite / "fixtures" / "t1" / "link").symlink_to("./a.txt")
    assert load_suite(suite).digest != before
