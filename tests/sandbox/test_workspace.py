"""lab.sandbox.workspace: fixture copies, snapshots, diffs, removal and path confinement."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from lab.errors import ToolError, WorkspaceError
from lab.sandbox.workspace import (
    TreeDiff,
    create_workspace,
    diff_snapshots,
    remove_workspace,
    resolve_inside,
    snapshot,
)


@pytest.fixture(autouse=True)
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Workspaces land under tmp_path, not the machine's temp directory."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    fixture = tmp_path / "fixture"
    (fixture / "pkg").mkdir(parents=True)
    (fixture / "calc.py").write_text("def total(n):\n    return sum(range(n))\n")
    (fixture / "pkg" / "mod.py").write_text("X = 1\n")
    (fixture / "run.sh").write_text("#!/bin/sh\necho ok\n")
    (fixture / "run.sh").chmod(0o755)
    os.symlink("calc.py", fixture / "link.py")
    os.symlink("/etc/passwd", fixture / "outside-link")
    return fixture


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


# --- create_workspace -----------------------------------------------------------

def test_copy_has_the_fixture_contents(fixture_dir: Path, temp_root: Path) -> None:
    workspace = create_workspace(fixture_dir)
    assert workspace.parent == temp_root.resolve() and workspace.name.startswith("lab-")
    assert snapshot(workspace) == snapshot(fixture_dir)
    assert os.access(workspace / "run.sh", os.X_OK)


def test_symlinks_are_copied_as_links(fixture_dir: Path) -> None:
    workspace = create_workspace(fixture_dir)
    assert os.readlink(workspace / "link.py") == "calc.py"
    assert os.readlink(workspace / "outside-link") == "/etc/passwd"


def test_copy_leaves_the_fixture_untouched(fixture_dir: Path) -> None:
    before = snapshot(fixture_dir)
    mtimes = {p: p.lstat().st_mtime_ns for p in fixture_dir.rglob("*")}
    workspace = create_workspace(fixture_dir)
    (workspace / "calc.py").write_text("changed\n")
    (workspace / "new.txt").write_text("new\n")
    assert snapshot(fixture_dir) == before
    assert {p: p.lstat().st_mtime_ns for p in fixture_dir.rglob("*")} == mtimes


def test_missing_fixture_is_a_workspace_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="no-such-fixture"):
        create_workspace(tmp_path / "no-such-fixture")


def test_git_init_commit_hash_is_deterministic(fixture_dir: Path) -> None:
    first = create_workspace(fixture_dir, git_init=True)
    second = create_workspace(fixture_dir, git_init=True)
    head = _git(first, "rev-parse", "HEAD")
    assert len(head) == 40
    assert head == _git(second, "rev-parse", "HEAD")
    assert _git(first, "status", "--porcelain") == ""
    # Same-second commits would collide anyway: check the identity is the fixed one.
    assert _git(first, "log", "--format=%an|%ae|%aI|%cn|%ce|%cI") == (
        "Reliability Lab|lab@reliability-lab.invalid|2000-01-01T00:00:00+00:00|"
        "Reliability Lab|lab@reliability-lab.invalid|2000-01-01T00:00:00+00:00")
    assert ".git/HEAD" not in snapshot(first)


def test_git_init_without_git_is_a_workspace_error(fixture_dir: Path, tmp_path: Path,
                                                   temp_root: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    with pytest.raises(WorkspaceError, match="fixture.*git"):
        create_workspace(fixture_dir, git_init=True)
    assert list(temp_root.iterdir()) == []  # the half-made copy was removed


# --- snapshot and diff ---------------------------------------------------------

def test_snapshot_hashes_files_and_records_links(fixture_dir: Path) -> None:
    snap = snapshot(fixture_dir)
    assert snap["pkg/mod.py"] == _sha(b"X = 1\n")
    assert snap["link.py"] == "symlink:calc.py"
    assert snap["outside-link"] == "symlink:/etc/passwd"
    assert list(snap) == sorted(snap)


@pytest.mark.parametrize("ignored", [".git/config", "node_modules/x/index.js",
                                     "pkg/__pycache__/mod.cpython-311.pyc",
                                     "deep/er/.pytest_cache/v/cache"])
def test_snapshot_ignores_tool_directories_anywhere(tmp_path: Path, ignored: str) -> None:
    target = tmp_path / ignored
    target.parent.mkdir(parents=True)
    target.write_text("noise")
    assert snapshot(tmp_path) == {}


def test_diff_lists_added_changed_deleted_sorted(tmp_path: Path) -> None:
    for name in ("b.txt", "a.txt", "keep.txt", "gone2.txt", "gone1.txt"):
        (tmp_path / name).write_text(name)
    before = snapshot(tmp_path)
    (tmp_path / "b.txt").write_text("B")
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "gone1.txt").unlink()
    (tmp_path / "gone2.txt").unlink()
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "new.txt").write_text("n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_text("ignored")
    diff = diff_snapshots(before, snapshot(tmp_path))
    assert diff == TreeDiff(added=["z/new.txt"], changed=["a.txt", "b.txt"],
                            deleted=["gone1.txt", "gone2.txt"])
    assert diff.paths == ["a.txt", "b.txt", "gone1.txt", "gone2.txt", "z/new.txt"]


def test_diff_sees_a_retargeted_symlink(tmp_path: Path) -> None:
    os.symlink("a", tmp_path / "link")
    before = snapshot(tmp_path)
    (tmp_path / "link").unlink()
    os.symlink("b", tmp_path / "link")
    assert diff_snapshots(before, snapshot(tmp_path)).changed == ["link"]


# --- remove_workspace ----------------------------------------------------------

def test_remove_handles_read_only_files_and_directories(fixture_dir: Path) -> None:
    workspace = create_workspace(fixture_dir)
    locked = workspace / "locked"
    locked.mkdir()
    (locked / "ro.txt").write_text("x")
    (locked / "ro.txt").chmod(stat.S_IRUSR)
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    remove_workspace(workspace)
    assert not workspace.exists()


def test_remove_missing_path_is_a_no_op(tmp_path: Path) -> None:
    remove_workspace(tmp_path / "never-existed")


def test_remove_unlinks_a_symlink_without_following_it(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    os.symlink(target, tmp_path / "link")
    remove_workspace(tmp_path / "link")
    assert (target / "keep.txt").exists() and not (tmp_path / "link").exists()


def test_remove_refuses_the_home_directory() -> None:
    with pytest.raises(WorkspaceError, match="refusing"):
        remove_workspace(Path.home())


# --- resolve_inside ------------------------------------------------------------

@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "a"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("f")
    sibling = tmp_path / "ab"  # shares the string prefix "…/a"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("secret")
    return root


@pytest.mark.parametrize("rel, message", [
    ("", "empty"), ("   ", "empty"),
    ("/etc/passwd", "absolute"), ("C:\\Windows\\x", "absolute"), ("C:/x", "absolute"),
    ("\\\\server\\share\\x", "absolute"), ("//server/share", "absolute"),
    ("a\x00b", "NUL"), ("~/x", "~"), ("~", "~"),
    ("../ab/secret.txt", "escapes"), ("sub/../../x", "escapes"), ("..", "escapes"),
])
def test_rejects_bad_relative_paths(root: Path, rel: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        resolve_inside(root, rel)


@pytest.mark.parametrize("rel, expected", [
    ("sub/f.txt", "sub/f.txt"), ("sub/../sub/f.txt", "sub/f.txt"),
    ("new/dir/file.txt", "new/dir/file.txt"), (".", ""), ("./sub", "sub"),
])
def test_accepts_paths_inside_even_if_missing(root: Path, rel: str, expected: str) -> None:
    assert resolve_inside(root, rel) == (root / expected).resolve()


def test_rejects_symlink_to_a_sibling_with_a_shared_prefix(root: Path) -> None:
    os.symlink("../ab/secret.txt", root / "innocent.txt")
    with pytest.raises(ToolError, match="escapes"):
        resolve_inside(root, "innocent.txt")


def test_rejects_path_through_a_directory_symlink_outside(root: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "ab", root / "linkdir")
    with pytest.raises(ToolError, match="escapes"):
        resolve_inside(root, "linkdir/not-yet-there.txt")


def test_rejects_dangling_symlink_pointing_outside(root: Path) -> None:
    os.symlink("/nonexistent-dir/x", root / "dangling")
    with pytest.raises(ToolError, match="escapes"):
        resolve_inside(root, "dangling")


def test_rejects_symlink_loop(root: Path) -> None:
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    with pytest.raises(ToolError, match="loop"):
        resolve_inside(root, "loop1/x")


def test_accepts_symlink_inside_and_returns_its_target(root: Path) -> None:
    os.symlink("sub/f.txt", root / "alias.txt")
    assert resolve_inside(root, "alias.txt") == (root / "sub" / "f.txt").resolve()


def test_root_given_through_a_symlink_still_works(root: Path, tmp_path: Path) -> None:
    os.symlink(root, tmp_path / "root-link")
    assert resolve_inside(tmp_path / "root-link", "sub/f.txt") == \
        (root / "sub" / "f.txt").resolve()
