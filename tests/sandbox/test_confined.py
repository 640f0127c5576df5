"""File access into a task copy never follows a link out of it (lab.sandbox.confined)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import ToolError
from lab.sandbox.confined import inspect_confined, write_confined


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.txt").write_text("inside\n")
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file\n")
    return root, outside


def test_writes_create_parents_and_replace_content(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    write_confined(root, "new/dir/b.txt", b"hello")
    write_confined(root, "pkg/a.txt", b"x")
    assert (root / "new" / "dir" / "b.txt").read_bytes() == b"hello"
    assert (root / "pkg" / "a.txt").read_bytes() == b"x"


def test_a_hard_link_to_a_host_file_is_never_written_through(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.link(outside / "secret.txt", root / "linked.txt")
    with pytest.raises(ToolError, match="hard links"):
        write_confined(root, "linked.txt", b"overwritten")
    assert (outside / "secret.txt").read_text() == "host file\n"


@pytest.mark.parametrize("rel", ["out.txt", "outdir/secret.txt"])
def test_symbolic_links_are_never_followed_on_write(layout: tuple[Path, Path], rel: str) -> None:
    root, outside = layout
    os.symlink(outside / "secret.txt", root / "out.txt")
    os.symlink(outside, root / "outdir")
    with pytest.raises(ToolError, match="symbolic link"):
        write_confined(root, rel, b"overwritten")
    assert (outside / "secret.txt").read_text() == "host file\n"


def test_a_fifo_is_refused_without_blocking(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="FIFO"):
        write_confined(root, "pipe", b"x")
    assert inspect_confined(root, "pipe").kind == "special"


@pytest.mark.parametrize("rel, message", [("../x", "escapes"), ("/etc/passwd", "absolute"), ("", "does not name")])
def test_paths_that_leave_the_root_are_errors(layout: tuple[Path, Path], rel: str, message: str) -> None:
    root, _ = layout
    with pytest.raises(ToolError, match=message):
        write_confined(root, rel, b"x")


def test_inspect_tells_what_the_agent_left(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.symlink(outside, root / "outdir")
    (root / "adir").mkdir()
    assert inspect_confined(root, "pkg/a.txt").data == b"inside\n"
    assert inspect_confined(root, "missing.txt").kind == "absent"
    assert inspect_confined(root, "missing/deeper.txt").kind == "absent"
    assert inspect_confined(root, "outdir/secret.txt").kind == "linked-parent"
    assert inspect_confined(root, "outdir").kind == "symlink"
    assert inspect_confined(root, "adir").kind == "directory"


NAMES = st.sampled_from(["a", "b", "link", "hl", "pkg"])


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(NAMES, min_size=1, max_size=4))
def test_no_relative_path_writes_outside_the_root(tmp_path_factory: pytest.TempPathFactory,
                                                   parts: list[str]) -> None:
    base = tmp_path_factory.mktemp("prop")
    root, outside = base / "ws", base / "host"
    root.mkdir()
    outside.mkdir()
    (outside / "hl").write_text("host")
    os.symlink(outside, root / "link")
    os.link(outside / "hl", root / "hl")
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    try:
        write_confined(root, "/".join(parts), b"agent")
    except ToolError:
        pass
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
