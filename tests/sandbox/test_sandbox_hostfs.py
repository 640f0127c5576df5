"""The host layout mirrored inside, and the sandbox's own /etc directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab.sandbox import hostfs
from lab.sandbox.base import SandboxError


def test_top_level_entries_mirror_symlinks_and_directories(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "bin").symlink_to("usr/bin")
    (tmp_path / "lib64").mkdir()
    assert hostfs.top_level_args(tmp_path) == [
        "--symlink", "usr/bin", "/bin", "--ro-bind", str(tmp_path / "lib64"), "/lib64"]


def test_host_etc_entries_are_bound_only_as_the_kind_of_their_mount_point(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "ld.so.cache").write_bytes(b"cache")
    (etc / "alternatives").write_text("a file where a directory is expected")
    (etc / "resolv.conf").write_text("nameserver 10.0.0.1\n")
    assert hostfs.etc_args(False, tmp_path) == [
        "--ro-bind-try", str(etc / "ld.so.cache"), "/etc/ld.so.cache"]
    assert hostfs.etc_args(True, tmp_path)[-3:] == [
        "--ro-bind-try", str(etc / "resolv.conf"), "/etc/resolv.conf"]


def test_the_support_etc_holds_the_generated_files_and_mount_points(tmp_path: Path) -> None:
    first = hostfs.support_dir(tmp_path)
    assert hostfs.support_dir(tmp_path) == first, "reused, not rewritten"
    assert (first / "passwd").read_text().startswith("lab:x:1000:1000:lab:/home/lab:")
    assert (first / "alternatives").is_dir() and (first / "ld.so.cache").stat().st_size == 0
    assert first.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in tmp_path.iterdir()] == [first.name], "no staging dir left"


def test_a_tampered_support_etc_is_refused(tmp_path: Path) -> None:
    support = hostfs.support_dir(tmp_path)
    (support / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    with pytest.raises(SandboxError, match="differs from what the lab writes; remove"):
        hostfs.support_dir(tmp_path)


def test_a_support_etc_others_can_write_is_refused(tmp_path: Path) -> None:
    support = hostfs.support_dir(tmp_path)
    os.chmod(support, 0o777)
    with pytest.raises(SandboxError, match="writable only by it; remove it"):
        hostfs.support_dir(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to change owners")
def test_chown_tree_changes_links_not_their_targets(tmp_path: Path) -> None:
    target = tmp_path / "host-file"
    target.write_text("x")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "link").symlink_to(target)
    hostfs.chown_tree(tree, 65534, 65534)
    assert os.lstat(tree / "sub" / "link").st_uid == 65534
    assert os.lstat(tree / "sub").st_uid == 65534
    assert os.lstat(target).st_uid == 0
