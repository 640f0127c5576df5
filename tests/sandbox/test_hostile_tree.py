"""A task copy the agent made hostile: deep nesting, planted links, read-only and immutable entries.

Every pass of the lab over a task copy (lab.sandbox.walk) is iterative, never
follows a link and is bounded when it reads; removal has no bound and keeps
one descriptor open whatever the depth. Real trees in tmp_path (or tmpfs).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.errors import WorkspaceError
from lab.sandbox.walk import Bounds, TreeBoundError, copy_tree, remove_inside, remove_tree, walk
from lab.sandbox.workspace import create_workspace, remove_workspace, snapshot
from tests.helpers.hostile_tree import fast_dir, immutable, nest, release

DEEP = 5_000


@pytest.mark.slow
def test_a_copy_nested_5000_deep_is_removed(tmp_path: Path) -> None:
    with fast_dir(tmp_path / "fallback") as base:
        workspace = base / "ws"
        workspace.mkdir()
        nest(workspace, DEEP)
        remove_workspace(workspace)  # shutil.rmtree: RecursionError past ~1,000 levels
        assert not os.path.lexists(workspace)


def test_a_snapshot_of_a_deep_copy_stops_at_the_depth_bound(tmp_path: Path) -> None:
    with fast_dir(tmp_path / "fallback") as base:
        nest(base, 1_500)
        with pytest.raises(TreeBoundError, match="deeper than 512 levels") as caught:
            snapshot(base)
        assert isinstance(caught.value, WorkspaceError)
        assert len(str(caught.value)) < 250 and "\n" not in str(caught.value)


def test_removal_never_follows_a_link_and_grants_what_was_made_read_only(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "sub").mkdir(parents=True)
    (host / "sub" / "keep.txt").write_text("host data\n")
    workspace = tmp_path / "ws"
    inner = workspace / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "link-dir").symlink_to(host)
    (inner / "link-file").symlink_to(host / "sub" / "keep.txt")
    (inner / "ro.txt").write_text("x")
    (inner / "ro.txt").chmod(0o400)
    (inner / "closed").mkdir()
    (inner / "closed" / "f").write_text("y")
    (inner / "closed").chmod(0)
    (workspace / "a").chmod(0o500)
    os.mkfifo(inner / "fifo")
    remove_workspace(workspace)
    assert not os.path.lexists(workspace)
    assert (host / "sub" / "keep.txt").read_text() == "host data\n"


def test_remove_inside_stops_at_a_planted_link(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "history.md").write_text("host file\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".agent").symlink_to(host)
    assert remove_inside(workspace, ".agent/history.md") is False
    assert (host / "history.md").exists()
    assert remove_inside(workspace, ".agent") is True  # the link itself, not what it points to
    assert not os.path.lexists(workspace / ".agent") and (host / "history.md").exists()


def test_an_immutable_file_names_itself_in_the_error(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    stuck = workspace / "sub" / "stuck.txt"
    stuck.write_text("z")
    if not immutable(stuck):
        pytest.skip("chattr +i does not hold here (needs root and ext4/xfs/btrfs)")
    try:
        with pytest.raises(WorkspaceError, match=r"cannot remove workspace .*sub/stuck\.txt"):
            remove_workspace(workspace)
    finally:
        release(stuck)
    remove_workspace(workspace)
    assert not workspace.exists()


def test_walk_bounds_entries_and_path_length(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"f{i:02}").write_text("")
    with pytest.raises(TreeBoundError, match="more than 10 entries"):
        list(walk(tmp_path, bounds=Bounds(entries=10)))
    long_name = "n" * 200
    deep = tmp_path / "p"
    deep.mkdir()
    nest(deep, 20, name=long_name)
    with pytest.raises(TreeBoundError, match="longer than 3072 characters"):
        list(walk(deep))


def test_copy_tree_keeps_links_as_links_and_modes(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "run.sh").write_text("#!/bin/sh\n")
    (source / "bin" / "run.sh").chmod(0o755)
    (source / "outside").symlink_to("/etc/passwd")
    (source / "__pycache__").mkdir()
    target = tmp_path / "dst"
    target.mkdir()
    copy_tree(source, target, skip=lambda name: name == "__pycache__")
    assert os.readlink(target / "outside") == "/etc/passwd"
    assert stat.S_IMODE((target / "bin" / "run.sh").stat().st_mode) == 0o755
    assert not (target / "__pycache__").exists()


def test_a_fixture_nested_past_the_bound_is_a_workspace_error(tmp_path: Path) -> None:
    with fast_dir(tmp_path / "fallback") as base:
        fixture = base / "fixture"
        fixture.mkdir()
        nest(fixture, 600)
        with pytest.raises(WorkspaceError, match="deeper than 512 levels"):
            create_workspace(fixture, parent=base)
        assert [p.name for p in base.iterdir()] == ["fixture"]  # nothing left behind
        remove_tree(fixture)


_shapes = st.lists(st.tuples(st.integers(0, 1_200), st.sampled_from(["file", "link-out", "read-only", "empty"])),
                   min_size=1, max_size=4)


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=_shapes)
def test_any_deep_tree_is_removed_and_its_links_targets_survive(tmp_path: Path, shapes: list[tuple[int, str]]) -> None:
    """Deep-tree kind: chains of any depth up to 1,200 ending in a file, an outward link, a
    read-only directory or nothing; removal leaves nothing and touches nothing outside, and a
    bounded walk either lists everything or stops at its bound, never a RecursionError."""
    with fast_dir(tmp_path / "fallback") as base:
        outside = base / "outside"
        outside.mkdir(exist_ok=True)
        (outside / "keep").write_text("k")
        workspace = base / "ws"
        workspace.mkdir()
        for i, (depth, end) in enumerate(shapes):
            chain = workspace / f"c{i}"
            chain.mkdir()
            nest(chain, depth)
            tip_fd = os.open(chain, os.O_RDONLY | os.O_DIRECTORY)
            for _ in range(depth):
                next_fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=tip_fd)
                os.close(tip_fd)
                tip_fd = next_fd
            if end == "link-out":
                os.symlink(str(outside), "out", dir_fd=tip_fd)
            elif end == "read-only":
                os.fchmod(tip_fd, 0o500)
            os.close(tip_fd)
        deepest = max(depth for depth, _ in shapes) + 1  # c<i>/d… plus the chain's own directory
        try:
            listed = list(walk(workspace))
            assert deepest <= 512 and any(e.rel.endswith("leaf.txt") for e in listed)
        except TreeBoundError:
            assert deepest > 511
        remove_tree(workspace)
        assert not os.path.lexists(workspace)
        assert (outside / "keep").read_text() == "k"


def test_a_link_above_the_tree_is_the_callers_and_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real" / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real")  # e.g. /tmp a link on some systems
    remove_tree(tmp_path / "alias" / "ws")
    assert not (tmp_path / "real" / "ws").exists() and (tmp_path / "alias").is_symlink()


def test_a_cancel_stops_a_fixture_copy_and_leaves_nothing(tmp_path: Path) -> None:
    # Ctrl-C while a large fixture is copied: the copy stops at the next entry and the partial copy
    # goes, so the lab's exit cleanup does not race a copy still writing into its temp root.
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    for i in range(50):
        (fixture / f"f{i}.txt").write_text("x")
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 10  # Ctrl-C after ten entries

    parent = tmp_path / "root"
    parent.mkdir()
    with pytest.raises(WorkspaceError, match="copy failed: .*cancelled"):
        create_workspace(fixture, parent=parent, cancelled=cancelled)
    assert len(asked) == 11 and list(parent.iterdir()) == []
