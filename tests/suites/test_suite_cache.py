"""A loaded suite remembered between commands (lab.suites.cache): the same suite, or loaded again.

Every test loads a copy of a bundled suite (files aged so they count as
settled) to remember it, changes something, and loads again.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.suites.cache as suite_cache
from lab.errors import SuiteError
from lab.paths import SUITES_DIR
from lab.suites.cache import decode_suite, encode_suite, load_suite_cached
from lab.suites.load import load_suite

OLD_S = 1_000_000_000


def age(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.utime(path, (OLD_S, OLD_S), follow_symlinks=False)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    copy = tmp_path / "smoke-coding"
    shutil.copytree(SUITES_DIR / "smoke-coding", copy, symlinks=True)
    age(copy)
    return copy


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The suites actually loaded (a spy around the real load_suite: a cache hit is an
    observable absence of a call, not a mocked behaviour)."""
    calls: list[Path] = []
    real: Callable[[Path], Any] = load_suite

    def spy(path: Path) -> Any:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(suite_cache, "load_suite", spy)
    return calls


def cached(suite: Path, tmp_path: Path) -> Any:
    return load_suite_cached(suite, cache=tmp_path / "cache")


def test_a_remembered_suite_is_the_loaded_one(suite: Path, tmp_path: Path, loads: list[Path]) -> None:
    first = cached(suite, tmp_path)
    again = cached(suite / "suite.json", tmp_path)
    assert len(loads) == 1
    assert again == first == load_suite(suite)
    assert again.digest == load_suite(suite).digest
    assert all(isinstance(t.fixture, Path) and isinstance(t.verifiers, tuple) for t in again.tasks)


@pytest.mark.parametrize("name", sorted({p.name for p in SUITES_DIR.glob("*") if (p / "suite.json").is_file()}))
def test_every_bundled_suite_reads_back_identical(name: str) -> None:
    suite = load_suite(SUITES_DIR / name)
    assert decode_suite(json.loads(json.dumps(encode_suite(suite)))) == suite


def edit_suite_json(suite: Path) -> None:
    doc = json.loads((suite / "suite.json").read_text(encoding="utf-8"))
    doc["tasks"][0]["prompt"] += " Edited."
    (suite / "suite.json").write_text(json.dumps(doc), encoding="utf-8")


def edit_fixture(suite: Path) -> None:
    file = next(p for p in sorted((suite / "fixtures").rglob("*")) if p.is_file())
    file.write_bytes(file.read_bytes() + b"\n")


def add_fixture_file(suite: Path) -> None:
    (suite / "fixtures" / "rename-symbol" / "NEW.txt").write_text("new\n", encoding="utf-8")


def remove_script(suite: Path) -> None:
    (suite / "scripts" / "rename-symbol.json").unlink()


def same_size_edit(suite: Path) -> None:
    file = next(p for p in sorted((suite / "fixtures").rglob("*.py")) if p.is_file())
    data = bytearray(file.read_bytes())
    data[0] = ord("#") if data[0] != ord("#") else ord(" ")
    file.write_bytes(bytes(data))
    os.utime(file, (OLD_S, OLD_S))


@pytest.mark.parametrize("change", [edit_suite_json, edit_fixture, add_fixture_file, remove_script, same_size_edit])
def test_a_changed_suite_is_loaded_again(suite: Path, tmp_path: Path, loads: list[Path],
                                         change: Callable[[Path], None]) -> None:
    before = cached(suite, tmp_path)
    change(suite)
    after = cached(suite, tmp_path)
    assert len(loads) == 2
    assert after == load_suite(suite) and after.digest != before.digest


def test_a_suite_that_does_not_load_is_not_remembered(suite: Path, tmp_path: Path, loads: list[Path]) -> None:
    cached(suite, tmp_path)
    (suite / "suite.json").write_text('{"schemaVersion": 1}', encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SuiteError):
            cached(suite, tmp_path)
    assert len(loads) == 3


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "dot-dot"])
def test_a_link_through_an_outside_link_is_checked_by_every_load(suite: Path, tmp_path: Path, loads: list[Path],
                                                                relative: bool) -> None:
    junction = tmp_path / "junction"  # outside the suite: it decides where the suite's link resolves
    junction.symlink_to(suite)
    target = os.path.relpath(junction / "suite.json", suite) if relative else str(junction / "suite.json")
    (suite / "notes").symlink_to(target)
    age(suite)
    assert cached(suite, tmp_path) == load_suite(suite)  # resolves inside the suite: it loads
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(suite, elsewhere, symlinks=True)
    junction.unlink()
    junction.symlink_to(elsewhere)  # the suite's own files and link text are unchanged
    with pytest.raises(SuiteError, match="notes"):
        load_suite(suite)
    with pytest.raises(SuiteError, match="notes"):
        cached(suite, tmp_path)  # as a cold load says
    assert len(loads) == 2
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_a_link_that_stays_inside_the_suite_is_remembered(suite: Path, tmp_path: Path, loads: list[Path]) -> None:
    (suite / "notes").symlink_to("scripts/../suite.json")
    age(suite)
    first = cached(suite, tmp_path)
    assert cached(suite, tmp_path) == first and len(loads) == 1


def test_a_suite_reached_through_a_link_is_remembered_and_follows_a_retarget(suite: Path, tmp_path: Path,
                                                                           loads: list[Path]) -> None:
    link = tmp_path / "linked"
    link.symlink_to(suite)
    first = cached(link, tmp_path)
    assert cached(link, tmp_path) == first and len(loads) == 1
    other = tmp_path / "other"
    shutil.copytree(suite, other, symlinks=True)
    (other / "suite.json").write_text((other / "suite.json").read_text(encoding="utf-8").replace(
        '"maxTurns": 12', '"maxTurns": 11', 1), encoding="utf-8")
    link.unlink()
    link.symlink_to(other)
    assert cached(link, tmp_path) == load_suite(link) != first and len(loads) == 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["..", ".", "scripts", "fixtures", "x"]), min_size=1, max_size=6), st.booleans())
def test_only_links_whose_target_stays_inside_are_trusted(tmp_path_factory: pytest.TempPathFactory,
                                                          parts: list[str], nested: bool) -> None:
    from lab.stamps import tree_stamps
    from lab.suites.cache import _links_leave

    root = tmp_path_factory.mktemp("suite")
    (root / "scripts").mkdir()
    where = root / "scripts" if nested else root
    (where / "link").symlink_to(os.path.join(*parts))
    lexical = os.path.normpath(os.path.join(where, *parts))
    inside = lexical == str(root) or lexical.startswith(str(root) + os.sep)
    assert _links_leave(root, tree_stamps(root, follow=False)) is not inside


def test_a_same_size_fixture_rewrite_with_its_mtime_put_back_loads_again(suite: Path, tmp_path: Path,
                                                                           loads: list[Path]) -> None:
    edit_fixture(suite)  # mtime now: remembered at once, checked by content
    first = cached(suite, tmp_path)
    cached(suite, tmp_path)
    assert len(loads) == 1
    file = next(p for p in sorted((suite / "fixtures").rglob("*")) if p.is_file())
    times = file.stat()
    data = file.read_bytes()
    file.write_bytes(data[:-1] + (b"x" if data[-1:] != b"x" else b"y"))
    os.utime(file, ns=(times.st_atime_ns, times.st_mtime_ns))
    again = cached(suite, tmp_path)
    assert len(loads) == 2
    assert again.digest == load_suite(suite).digest != first.digest


@pytest.mark.parametrize("damage", ["garbage", "foreign", "another shape"])
def test_a_corrupt_or_foreign_entry_is_loaded_again(suite: Path, tmp_path: Path, loads: list[Path],
                                                     damage: str) -> None:
    good = cached(suite, tmp_path)
    (entry,) = (tmp_path / "cache" / "suites").glob("*.json")
    doc = json.loads(entry.read_text(encoding="utf-8"))
    if damage == "garbage":
        entry.write_bytes(b"{{{")
    elif damage == "foreign":
        entry.write_text(json.dumps({**doc, "kind": "composed-config"}), encoding="utf-8")
    else:
        doc["suite"]["tasks"][0]["unknownField"] = 1
        entry.write_text(json.dumps(doc), encoding="utf-8")
    assert cached(suite, tmp_path) == good
    assert len(loads) == 2
