"""The suite's one listing (lab.suites.tree) serves the fixture checks and the digest: a fixture the
listing reached without a link is accepted without further checks, anything else still goes through
the full one. Real directories, links and FIFOs in tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lab.errors import SuiteError
from lab.suites.load import load_suite, suite_digest
from lab.suites.tree import DIR, FILE, LINK, OTHER, walk_suite


def make(root: Path, fixtures: list[str]) -> Path:
    for name in ("t1", "t2"):
        (root / "fixtures" / name).mkdir(parents=True, exist_ok=True)
        (root / "fixtures" / name / "a.txt").write_text(name)
    tasks: list[dict[str, Any]] = [
        {"id": f"t{i}", "prompt": "p", "fixture": fixture, "budget": {"maxTurns": 1, "maxWallMs": 1000},
         "policy": {"mode": "auto"}, "verifiers": [{"id": "v", "kind": "file-absent", "path": "x"}]}
        for i, fixture in enumerate(fixtures)]
    (root / "suite.json").write_text(json.dumps({"schemaVersion": 1, "suiteId": "demo", "suiteVersion": "1.0.0",
                                                 "description": "d", "tasks": tasks}))
    return root


def problems(suite: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(suite)
    return info.value.problems[1:]


@pytest.mark.parametrize("spelling", ["fixtures/t1", "fixtures/t1/", "./fixtures/t1", "fixtures//t1", "fixtures/./t1"])
def test_every_spelling_of_a_fixture_directory_loads_as_that_directory(tmp_path: Path, spelling: str) -> None:
    suite = make(tmp_path / "suite", [spelling])
    assert load_suite(suite).tasks[0].fixture == suite / "fixtures" / "t1"


def test_a_spelling_that_names_the_suite_itself_is_still_refused(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite", ["./."])
    assert problems(suite) == ["suite demo: task t0: tasks[0].fixture: fixture './.' is the suite directory "
                               "itself; use a subdirectory"]


def test_a_fixture_reached_through_a_link_inside_the_suite_gets_the_full_check(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite", ["fixtures/alias", "fixtures/to-file", "fixtures/to-root"])
    (suite / "fixtures" / "alias").symlink_to("t2")
    (suite / "fixtures" / "to-file").symlink_to("t1/a.txt")
    (suite / "fixtures" / "to-root").symlink_to("..")
    assert problems(suite) == [
        "suite demo: task t1: tasks[1].fixture: fixture 'fixtures/to-file' is not a directory",
        "suite demo: task t2: tasks[2].fixture: fixture 'fixtures/to-root' is the suite directory itself; "
        "use a subdirectory"]
    (suite / "suite.json").write_text((suite / "suite.json").read_text().replace(
        '"fixtures/to-file"', '"fixtures/t1"').replace('"fixtures/to-root"', '"fixtures/t2"'))
    assert load_suite(suite).tasks[0].fixture == suite / "fixtures" / "alias"


def test_the_listing_types_entries_without_following_links(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite", ["fixtures/t1"])
    (suite / "fixtures" / "t1" / "link").symlink_to("a.txt")
    (suite / "fixtures" / "dirlink").symlink_to("t1")
    os.mkfifo(suite / "fixtures" / "pipe")
    (suite / ".git" / "x").mkdir(parents=True)
    (suite / "fixtures" / "t2" / "__pycache__").mkdir()
    tree = walk_suite(suite)
    kinds = {entry.rel: entry.kind for entry in tree.entries}
    assert kinds == {"suite.json": FILE, "fixtures": DIR, "fixtures/t1": DIR, "fixtures/t1/a.txt": FILE,
                     "fixtures/t1/link": LINK, "fixtures/t2": DIR, "fixtures/t2/a.txt": FILE,
                     "fixtures/dirlink": LINK, "fixtures/pipe": OTHER}
    assert tree.dirs == {"fixtures", "fixtures/t1", "fixtures/t2"}
    assert all(entry.path == os.path.join(suite, entry.rel) for entry in tree.entries)


def test_the_digest_refuses_a_fifo_and_ignores_the_suites_cassettes(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite", ["fixtures/t1"])
    before = suite_digest(suite)
    (suite / "cassettes" / "demo").mkdir(parents=True)
    (suite / "cassettes" / "demo" / "t0.jsonl").write_text("{}\n")
    os.mkfifo(suite / "cassettes" / "demo" / "pipe")
    assert suite_digest(suite) == before
    os.mkfifo(suite / "fixtures" / "t2" / "pipe")
    with pytest.raises(SuiteError, match=r"fixtures/t2/pipe: not a regular file"):
        suite_digest(suite)


def test_the_digest_of_the_listing_is_the_digest_of_the_directory(tmp_path: Path) -> None:
    suite = make(tmp_path / "suite", ["fixtures/t1"])
    (suite / "fixtures" / "t1" / "big.bin").write_bytes(os.urandom(3 << 20))  # read in more than one chunk
    assert suite_digest(suite, walk_suite(suite)) == suite_digest(suite) == load_suite(suite).digest
