"""File stamps and the digest cache (lab.stamps): what a no-op command checks instead of reading files."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from lab.stamps import RACY_NS, DigestCache, read_entry, settled, stamp, tree_stamps, write_entry

OLD_S = 1_000_000_000  # 2001: long settled


def aged(path: Path, content: bytes) -> Path:
    """``path`` holding ``content``, its mtime set far in the past (settled)."""
    path.write_bytes(content)
    os.utime(path, (OLD_S, OLD_S))
    return path


def remembered_digest(cache_file: Path, path: Path) -> str:
    doc = json.loads(cache_file.read_text(encoding="utf-8"))
    return str(doc["files"][str(path)][4])


def test_a_digest_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    file = aged(tmp_path / "a.jsonl", b"one\n")
    assert DigestCache(None).digest(file) == hashlib.sha256(b"one\n").hexdigest()
    assert DigestCache(None).digest(tmp_path / "missing") is None


def test_a_remembered_digest_is_used_while_the_stamp_is_unchanged(tmp_path: Path) -> None:
    file, cache_file = aged(tmp_path / "a.jsonl", b"one\n"), tmp_path / "digests.json"
    first = DigestCache(cache_file)
    first.digest(file)
    first.save()
    # Plant another value: a fresh cache returns it, so it did not read the file.
    doc = json.loads(cache_file.read_text(encoding="utf-8"))
    doc["files"][str(file)][4] = "f" * 64
    cache_file.write_text(json.dumps(doc), encoding="utf-8")
    assert DigestCache(cache_file).digest(file) == "f" * 64


@pytest.mark.parametrize("edit", ["same size, mtime put back", "replaced by rename", "appended"])
def test_an_edited_file_is_hashed_again(tmp_path: Path, edit: str) -> None:
    file, cache_file = aged(tmp_path / "a.jsonl", b"one\n"), tmp_path / "digests.json"
    cache = DigestCache(cache_file)
    cache.digest(file)
    cache.save()
    if edit == "same size, mtime put back":  # the ctime still moves: touch -d cannot hide a write
        aged(file, b"two\n")
    elif edit == "replaced by rename":
        aged(tmp_path / "b", b"two\n").replace(file)
        os.utime(file, (OLD_S, OLD_S))
    else:
        with file.open("ab") as fh:
            fh.write(b"two\n")
    expected = hashlib.sha256(file.read_bytes()).hexdigest()
    assert DigestCache(cache_file).digest(file) == expected


def test_a_file_changed_just_now_is_not_remembered(tmp_path: Path) -> None:
    file, cache_file = tmp_path / "a.jsonl", tmp_path / "digests.json"
    file.write_bytes(b"fresh\n")  # mtime now: a same-size rewrite in this clock tick would keep it
    cache = DigestCache(cache_file)
    assert cache.digest(file) == hashlib.sha256(b"fresh\n").hexdigest()
    cache.save()
    assert not cache_file.exists() or str(file) not in json.loads(cache_file.read_text())["files"]


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"schemaVersion": 99, "kind": "file-digests"}',
                                     b'{"schemaVersion": 1, "kind": "other", "files": {}}',
                                     b'{"schemaVersion": 1, "kind": "file-digests", "files": {"x": "y"}}'])
def test_a_corrupt_or_foreign_cache_file_is_ignored(tmp_path: Path, content: bytes) -> None:
    file, cache_file = aged(tmp_path / "a.jsonl", b"one\n"), tmp_path / "digests.json"
    cache_file.write_bytes(content)
    cache = DigestCache(cache_file)
    assert cache.digest(file) == hashlib.sha256(b"one\n").hexdigest()
    cache.save()
    assert remembered_digest(cache_file, file) == hashlib.sha256(b"one\n").hexdigest()


def test_stamps_tell_a_write_from_a_touch(tmp_path: Path) -> None:
    file = aged(tmp_path / "a", b"one")
    before = stamp(file)
    aged(file, b"two")  # same size, same mtime
    after = stamp(file)
    assert before is not None and after is not None
    assert before[:2] == after[:2] and before != after  # the ctime moved
    assert stamp(tmp_path / "missing") is None


def test_a_new_file_changes_its_directory_stamp(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    aged(root / "sub" / "a", b"x")
    before = tree_stamps(root)
    (root / "sub" / "b").write_bytes(b"y")
    assert before[str(root / "sub")] != stamp(root / "sub")
    assert set(tree_stamps(root)) == set(before) | {str(root / "sub" / "b")}


def test_settled_means_older_than_the_racy_window() -> None:
    now = 10 * RACY_NS
    assert settled([[1, now - RACY_NS, 1, 1], None], now)
    assert not settled([[1, now - RACY_NS + 1, 1, 1]], now)


def test_entries_are_checked_when_read(tmp_path: Path) -> None:
    file = tmp_path / "entry.json"
    assert write_entry(file, "kind-a", {"value": 1})
    assert read_entry(file, "kind-a") == {"schemaVersion": 1, "kind": "kind-a", "value": 1}
    assert read_entry(file, "kind-b") is None
    file.write_bytes(b"\xff\xfe")
    assert read_entry(file, "kind-a") is None
    assert read_entry(tmp_path / "missing.json", "kind-a") is None
