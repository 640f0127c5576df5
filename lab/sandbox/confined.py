"""File access from the lab process into a task copy, without following links out of it.

The agent's file tools and the file verifiers run in the lab's own process,
outside any sandbox, so they must not be tricked by what a command inside
the task copy left behind:

- a **symbolic link** anywhere on the path is never followed when writing
  (every directory is opened relative to its parent's file descriptor with
  ``O_NOFOLLOW``, the file itself too);
- a file with **more than one hard link** is never written: a hard link made
  by an earlier command may point at a file outside the task copy;
- **FIFOs, sockets and devices** are never opened for reading or writing
  (opening a FIFO blocks past every budget).

``write_confined`` is what ``write_file``/``edit_file`` use;
``inspect_confined`` is what the file verifiers use to tell "the agent
replaced the file by a link, a FIFO or a directory" (a failed check) from
"the file is there" (read it).
"""

from __future__ import annotations

import os
import stat
from contextlib import ExitStack
from dataclasses import dataclass

from lab.errors import ToolError
from lab.sandbox.walk import MAX_FILE_BYTES, TreeBoundError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(rel: str) -> list[str]:
    if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise ToolError(f"path {rel!r} is absolute; give a path relative to the workspace")
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ToolError(f"path {rel!r} escapes the workspace ('..')")
    if not parts or "\x00" in rel:
        raise ToolError(f"path {rel!r} does not name a file inside the workspace")
    return parts


def _open_parent(root: str, parts: list[str], rel: str, stack: ExitStack, *, create: bool) -> int:
    """A file descriptor of the directory holding ``parts[-1]``, walked without following links."""
    fd = os.open(root, _DIR_FLAGS)
    stack.callback(os.close, fd)
    for name in parts[:-1]:
        if create:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise ToolError(f"path {rel!r}: {name!r} is not a directory inside the workspace "
                            f"(a symbolic link or a file): {exc.strerror}") from exc
        stack.callback(os.close, child)
        fd = child
    return fd


def write_confined(root: str | os.PathLike[str], rel: str, data: bytes) -> None:
    """Write ``data`` to ``root/rel``, creating parent directories, following no link.

    Args:
        root: the task copy.
        rel: a relative POSIX path (already checked by ``resolve_inside``).
        data: the new content; the file is truncated first.

    Raises:
        ToolError: a component is a symbolic link or not a directory; the
            target is a symbolic link, a directory, a FIFO, socket or device,
            or has more than one hard link; or the write fails (message names
            the path).
    """
    parts = _parts(rel)
    with ExitStack() as stack:
        parent = _open_parent(os.fspath(root), parts, rel, stack, create=True)
        try:
            before = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            before = None
        if before is not None and stat.S_ISLNK(before.st_mode):
            raise ToolError(f"cannot write {rel!r}: it is a symbolic link; refusing to follow it")
        if before is not None and not stat.S_ISREG(before.st_mode):
            what = "a directory" if stat.S_ISDIR(before.st_mode) else "a FIFO, socket or device"
            raise ToolError(f"{rel!r} is not a regular file ({what}); refusing to open it")
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, 0o644, dir_fd=parent)
        except OSError as exc:
            raise ToolError(f"cannot write {rel!r}: {_why(exc)}") from exc
        stack.callback(os.close, fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{rel!r} is not a regular file; refusing to write it")
        if info.st_nlink > 1:
            raise ToolError(f"{rel!r} has {info.st_nlink} hard links (one may lead outside the workspace); "
                            "refusing to write through it; remove it first")
        try:
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            raise ToolError(f"cannot write {rel!r}: {exc.strerror or exc}") from exc


def _why(exc: OSError) -> str:
    if exc.errno == 40:  # ELOOP: O_NOFOLLOW met a symbolic link
        return "it is a symbolic link; refusing to follow it"
    if exc.errno == 21:  # EISDIR
        return "it is a directory"
    return exc.strerror or str(exc)


@dataclass(frozen=True)
class Found:
    """What is at a verifier's path.

    Attributes:
        kind: ``"file"`` (a regular file, read into ``data``), ``"absent"``,
            or what the agent put there instead: ``"symlink"``,
            ``"directory"``, ``"special"`` (FIFO, socket, device),
            ``"linked-parent"`` (a directory on the way is a symbolic link).
        data: the file's bytes when ``kind == "file"``, else None.
    """

    kind: str
    data: bytes | None = None

    def describe(self) -> str:
        """The kind in words, for a verifier's detail line."""
        return {"file": "a regular file", "absent": "absent", "symlink": "a symbolic link",
                "directory": "a directory", "special": "a FIFO, socket or device",
                "linked-parent": "under a directory that is a symbolic link"}[self.kind]


def inspect_confined(root: str | os.PathLike[str], rel: str, *, read: bool = True,
                     max_bytes: int = MAX_FILE_BYTES) -> Found:
    """Look at ``root/rel`` without following any link, and read it when it is a regular file.

    Args:
        root: the task copy.
        rel: the verifier's relative path.
        read: read a regular file's bytes into ``data`` (False: only its kind).
        max_bytes: the largest file read; a larger one is never read.

    Raises:
        ToolError: ``rel`` is empty or contains ``..`` (a suite error, checked at load).
        TreeBoundError: the file is larger than ``max_bytes`` (the agent's doing:
            a verifier fails with this reason).
        OSError: the file exists but cannot be read.
    """
    parts = _parts(rel)
    with ExitStack() as stack:
        try:
            parent = _open_parent(os.fspath(root), parts, rel, stack, create=False)
        except ToolError:
            return Found("absent" if not _lexists_any(os.fspath(root), parts) else "linked-parent")
        try:
            info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return Found("absent")
        if stat.S_ISLNK(info.st_mode):
            return Found("symlink")
        if stat.S_ISDIR(info.st_mode):
            return Found("directory")
        if not stat.S_ISREG(info.st_mode):
            return Found("special")
        if not read:
            return Found("file")
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # Never more than the bound: refused by its size unread, and read no further if it grew.
            data = handle.read(max_bytes + 1) if size <= max_bytes else b""
            if size > max_bytes or len(data) > max_bytes:
                raise TreeBoundError(f"{rel} is {max(size, len(data))} bytes, more than the "
                                     f"{max_bytes >> 20} MiB the lab reads of one file")
            return Found("file", data)


def _lexists_any(root: str, parts: list[str]) -> bool:
    """Whether some leading component of the path exists (as anything, links included)."""
    path = root
    for name in parts[:-1]:
        path = os.path.join(path, name)
        if not os.path.lexists(path):
            return False
        if os.path.islink(path) or not os.path.isdir(path):
            return True
    return True
