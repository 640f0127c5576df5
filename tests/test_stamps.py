"""Content stamps and the digest cache (lab.stamps): what a command checks before a memo stands in for work."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from lab.stamps import (
    DigestCache,
    content_stamp,
    read_entry,
    remember,
    remembered,
    stamps_unchanged,
    tree_stamps,
    write_entry,
)

OLD_S = 1_000_000_000  # 2001: long settled


def aged(path: Path, content: bytes) -> Path:
    """``path`` holding ``content``, its mtime set far in the past."""
    path.write_bytes(content)
    os.utime(path, (OLD_S, OLD_S))
    return path


def upper(data: bytes) -> str:
    return data.decode().upper()


def test_a_digest_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    file = aged(tmp_path / "a.jsonl", b"one\n")
    assert DigestCache(None).digest(file) == hashlib.sha256(b"one\n").hexdigest()
    assert DigestCache(None).digest(tmp_path / "missing") is None


def test_a_derived_value_is_remembered_by_the_bytes_it_was_derived_from(tmp_path: Path) -> None:
    file, cache_file = aged(tmp_path / "a.py", b"one\n"), tmp_path / "digests.json"
    first = DigestCache(cache_file)
    assert first.digest(file, upper, kind="up") == "ONE\n"
    first.save()
    # Plant another value for the same bytes: a fresh cache returns it, so it did not derive again.
    doc = json.loads(cache_file.read_text(encoding="utf-8"))
    doc["files"][f"up:{hashlib.sha256(b'one' + bytes([10])).hexdigest()}"] = "planted"
    cache_file.write_text(json.dumps(doc), encoding="utf-8")
    assert DigestCache(cache_file).digest(file, upper, kind="up") == "planted"


@pytest.mark.parametrize("edit", ["same size, mtime put back", "replaced by rename", "appended"])
def test_an_edited_file_is_derived_again(tmp_path: Path, edit: str) -> None:
    file, cache_file = aged(tmp_path / "a.py", b"one\n"), tmp_path / "digests.json"
    cache = DigestCache(cache_file)
    cache.digest(file, upper, kind="up")
    cache.save()
    if edit == "same size, mtime put back":
        aged(file, b"two\n")
    elif edit == "replaced by rename":
        aged(tmp_path / "b", b"two\n").replace(file)
        os.utime(file, (OLD_S, OLD_S))
    else:
        with file.open("ab") as fh:
            fh.write(b"two\n")
    assert DigestCache(cache_file).digest(file, upper, kind="up") == file.read_text().upper()


def test_a_file_changed_just_now_is_checked_by_content(tmp_path: Path) -> None:
    """No settling window: a file written this instant is remembered, and a same-size rewrite in the
    same clock tick is still seen (the bytes are compared, not the times)."""
    file, cache_file = tmp_path / "a.py", tmp_path / "digests.json"
    file.write_bytes(b"fresh\n")
    cache = DigestCache(cache_file)
    assert cache.digest(file, upper, kind="up") == "FRESH\n"
    cache.save()
    stat = file.stat()
    file.write_bytes(b"stale\n")
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert DigestCache(cache_file).digest(file, upper, kind="up") == "STALE\n"


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"schemaVersion": 99, "kind": "file-digests"}',
                                     b'{"schemaVersion": 2, "kind": "other", "files": {}}',
                                     b'{"schemaVersion": 2, "kind": "file-digests", "files": {"x": ["y"]}}'])
def test_a_corrupt_or_foreign_cache_file_is_ignored(tmp_path: Path, content: bytes) -> None:
    file, cache_file = aged(tmp_path / "a.py", b"one\n"), tmp_path / "digests.json"
    cache_file.write_bytes(content)
    cache = DigestCache(cache_file)
    assert cache.digest(file, upper, kind="up") == "ONE\n"
    cache.save()
    assert json.loads(cache_file.read_text())["files"][f"up:{hashlib.sha256(b'one' + bytes([10])).hexdigest()}"] == "ONE\n"


def test_a_content_stamp_is_the_content_not_the_file_times(tmp_path: Path) -> None:
    file = aged(tmp_path / "a", b"one")
    before = content_stamp(file)
    os.utime(file, (OLD_S + 5, OLD_S + 5))
    assert content_stamp(file) == before == ["f", hashlib.sha256(b"one").hexdigest()]
    aged(file, b"two")  # same size, same mtime
    assert content_stamp(file) != before
    assert content_stamp(tmp_path / "missing") is None
    (tmp_path / "link").symlink_to("a")
    assert content_stamp(tmp_path / "link", follow=False) == ["l", hashlib.sha256(b"a").hexdigest()]
    assert content_stamp(tmp_path / "link") == content_stamp(file)


def test_a_new_file_changes_its_directory_stamp(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    aged(root / "sub" / "a", b"x")
    before = tree_stamps(root)
    (root / "sub" / "b").write_bytes(b"y")
    assert before[str(root / "sub")] != content_stamp(root / "sub")
    assert set(tree_stamps(root)) == set(before) | {str(root / "sub" / "b")}
    assert not stamps_unchanged(before)


def test_a_retargeted_link_is_a_change(tmp_path: Path) -> None:
    aged(tmp_path / "a", b"1")
    aged(tmp_path / "b", b"1")  # same bytes: only the link's target text tells them apart
    (tmp_path / "link").symlink_to("a")
    before = tree_stamps(tmp_path, follow=False)
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to("b")
    assert not stamps_unchanged(before)


def coarse_clock_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system with 1-second timestamps and a lab clock 10 s ahead of the file server's.

    Neither can be set up in a test (no such mount, no second clock), so what the lab sees of
    them is made: ``os.stat`` reports times truncated to whole seconds, ctime included, as such
    a file system does, and ``time.time_ns`` runs 10 s ahead.
    """
    import time

    real_stat, real_time = os.stat, time.time_ns

    def coarse(path: object, *args: object, **kwargs: object) -> os.stat_result:
        st = real_stat(path, *args, **kwargs)  # type: ignore[call-overload]
        fields = list(st)
        for i in (7, 8, 9):  # st_atime, st_mtime, st_ctime (int seconds)
            fields[i] = int(fields[i])
        whole = {name: getattr(st, name) // 10**9 * 10**9 for name in ("st_atime_ns", "st_mtime_ns", "st_ctime_ns")}
        result = os.stat_result(fields, {**{k: getattr(st, k) for k in ("st_blksize", "st_blocks")}, **whole})
        return result

    monkeypatch.setattr(os, "stat", coarse)
    monkeypatch.setattr(time, "time_ns", lambda: real_time() + 10 * 10**9)


def test_two_same_size_writes_in_one_second_with_the_clock_ahead_are_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25, finding 4: the cassette digest remembered after the first write is not trusted after the second."""
    coarse_clock_ahead(monkeypatch)
    cassette, entry = tmp_path / "task.jsonl", tmp_path / "entry.json"
    cassette.write_bytes(b'{"tokens": 206}\n')
    inputs = {str(cassette): content_stamp(cassette)}
    assert remember(entry, "facts", {"id": 1}, inputs, {"tokens": 206})
    assert remembered(entry, "facts", {"id": 1}) is not None
    cassette.write_bytes(b'{"tokens": 204}\n')  # same size, same second: the same (coarse) stat
    assert remembered(entry, "facts", {"id": 1}) is None


def test_an_input_changed_while_it_was_read_is_not_remembered(tmp_path: Path) -> None:
    file, entry = aged(tmp_path / "conf.yaml", b"k: 1\n"), tmp_path / "entry.json"
    inputs = {str(file): content_stamp(file)}
    aged(file, b"k: 2\n")  # the work read this version
    assert not remember(entry, "facts", {"id": 1}, inputs, {"k": 2})
    assert not entry.exists()


def test_lab_no_cache_bypasses_every_memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file, entry, cache_file = aged(tmp_path / "a.py", b"one\n"), tmp_path / "entry.json", tmp_path / "d.json"
    inputs = {str(file): content_stamp(file)}
    assert remember(entry, "facts", {"id": 1}, inputs, {})
    monkeypatch.setenv("LAB_NO_CACHE", "1")
    assert remembered(entry, "facts", {"id": 1}) is None
    assert not remember(tmp_path / "other.json", "facts", {"id": 1}, inputs, {})
    cache = DigestCache(cache_file)
    cache.digest(file, upper, kind="up")
    cache.save()
    assert not cache_file.exists() and not (tmp_path / "other.json").exists()


def test_entries_are_checked_when_read(tmp_path: Path) -> None:
    file = tmp_path / "entry.json"
    assert write_entry(file, "kind-a", {"value": 1})
    assert read_entry(file, "kind-a") == {"schemaVersion": 2, "kind": "kind-a", "value": 1}
    assert read_entry(file, "kind-b") is None
    file.write_bytes(b"\xff\xfe")
    assert read_entry(file, "kind-a") is None
    assert read_entry(tmp_path / "missing.json", "kind-a") is None
