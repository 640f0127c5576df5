"""Walking, copying and removing a task copy an agent may have made hostile (SPEC S1, S3).

What a run leaves in its task copy is read, matched and removed by the lab's
own process, outside any sandbox. An agent chooses that tree: it can nest
thousands of directories (one line of Python), plant symbolic links to host
files, leave a sparse file of hundreds of MiB, or make entries read-only. So
every pass over a task copy goes through this module:

- **iterative**: an explicit stack, never one Python frame per directory
  level (``shutil.rmtree``, ``copytree`` and ``os.walk`` of Python 3.11
  recurse per level and raise ``RecursionError`` around 1,000 levels);
- **never following links**: a symbolic link is an entry, never a directory
  to enter, and removal works on directory file descriptors opened with
  ``O_NOFOLLOW``, so no link (even one swapped in meanwhile) leads it out;
- **bounded** when reading (:class:`Bounds`: entries, depth, path length,
  bytes): a tree past a bound raises :class:`TreeBoundError`, which the
  verifiers turn into the agent's ``fail`` with the bound as the reason.
  Removal is not bounded (what the lab made it must remove) and keeps one
  descriptor open at a time whatever the depth, climbing back with ``..``
  checked against the device and inode it came from (as ``fts`` does).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from lab.errors import WorkspaceError

MAX_ENTRIES = 200_000
"""Entries (files, directories, links) a walk lists before it stops."""
MAX_DEPTH = 512
"""Directory levels a walk enters before it stops."""
MAX_PATH_CHARS = 3_072
"""Characters of a relative path a walk accepts (the kernel's PATH_MAX is 4,096 with the root)."""
MAX_TREE_BYTES = 512 << 20
"""Bytes of file content one snapshot of a task copy hashes (512 MiB)."""
MAX_FILE_BYTES = 64 << 20
"""Bytes of one file the lab reads into memory (a file verifier, ``read_file``): 64 MiB."""

DIR, FILE, LINK, SPECIAL = "dir", "file", "link", "special"
"""Entry kinds: a directory, a regular file, a symbolic link, anything else (FIFO, socket, device)."""

_TRUSTED_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = _TRUSTED_DIR_FLAGS | os.O_NOFOLLOW
_OWNER_ALL = stat.S_IRWXU


class TreeBoundError(WorkspaceError):
    """A task copy exceeds a bound the lab walks or reads it within (:class:`Bounds`).

    The message is one line naming the bound and where it was met; a verifier
    that meets it fails (the agent left that tree), it is not an
    infrastructure error.
    """


@dataclass(frozen=True)
class Bounds:
    """Limits of one walk.

    Attributes:
        entries: entries listed at most.
        depth: directory levels entered at most (top-level entries are level 1).
        path_chars: longest relative path accepted, in characters.
    """

    entries: int = MAX_ENTRIES
    depth: int = MAX_DEPTH
    path_chars: int = MAX_PATH_CHARS


FIXTURE_BOUNDS = Bounds(entries=2_000_000)
"""Bounds of a pass over a fixture or its fresh copy (a fixture may ship a large ``node_modules``);
depth and path length stay bounded."""


class Entry(NamedTuple):
    """One entry of a walk."""

    rel: str
    """``/``-separated path relative to the root."""
    path: str
    """The root joined with ``rel``."""
    kind: str
    """:data:`DIR`, :data:`FILE`, :data:`LINK` or :data:`SPECIAL` (links not followed)."""
    size: int
    """Size in bytes for a :data:`FILE` (``lstat``), else 0."""


def _kind(item: os.DirEntry[str]) -> str:
    if item.is_symlink():
        return LINK
    if item.is_dir(follow_symlinks=False):
        return DIR
    if item.is_file(follow_symlinks=False):
        return FILE
    return SPECIAL


def walk(root: str | os.PathLike[str], *, skip: Callable[[str], bool] | None = None,
         descend: Callable[[str], bool] | None = None, bounds: Bounds = Bounds()) -> Iterator[Entry]:
    """Every entry under ``root``, parents before children, names sorted per directory.

    One ``os.scandir`` per directory, an explicit stack (no recursion), links
    listed and never entered.

    Args:
        root: the directory to walk (itself not listed).
        skip: entry names left out, with everything below them (None: none).
        descend: whether to enter the directory at this ``rel`` (None: all);
            a directory not entered is still listed.
        bounds: limits; the generator raises when one is passed.

    Yields:
        :class:`Entry` per entry.

    Raises:
        TreeBoundError: more entries, deeper nesting or a longer path than
            ``bounds`` allow (names the bound and the path reached).
        OSError: a directory could not be listed.
    """
    base = os.fspath(root)
    pending: list[tuple[str, int]] = [("", 0)]
    count = 0
    while pending:
        rel_dir, depth = pending.pop()
        with os.scandir(os.path.join(base, rel_dir) if rel_dir else base) as listing:
            items = sorted(listing, key=lambda item: item.name)
        below = []
        for item in items:
            if skip is not None and skip(item.name):
                continue
            rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
            count += 1
            _check_bounds(bounds, count, depth + 1, rel)
            kind = _kind(item)
            size = item.stat(follow_symlinks=False).st_size if kind == FILE else 0
            yield Entry(rel, item.path, kind, size)
            if kind == DIR and (descend is None or descend(rel)):
                below.append(rel)
        pending.extend((rel, depth + 1) for rel in reversed(below))


def _check_bounds(bounds: Bounds, count: int, depth: int, rel: str) -> None:
    shown = rel if len(rel) <= 80 else rel[:77] + "..."
    if count > bounds.entries:
        raise TreeBoundError(f"the task copy holds more than {bounds.entries} entries "
                             f"(the most the lab lists; reached at {shown!r})")
    if depth > bounds.depth:
        raise TreeBoundError(f"the task copy nests directories deeper than {bounds.depth} levels "
                             f"(the most the lab enters; reached at {shown!r})")
    if len(rel) > bounds.path_chars:
        raise TreeBoundError(f"the task copy holds a path longer than {bounds.path_chars} "
                             f"characters (the longest the lab accepts; {shown!r})")


def copy_tree(source: str | os.PathLike[str], target: str | os.PathLike[str], *,
              skip: Callable[[str], bool] | None = None, bounds: Bounds = FIXTURE_BOUNDS,
              cancelled: Callable[[], bool] | None = None) -> None:
    """Copy directory ``source`` into the existing directory ``target``, iteratively.

    Symbolic links are copied as links (never followed); files with
    ``shutil.copy2`` (content, mode, times); directories get the source's mode
    and times once filled. A FIFO, socket or device is refused. ``cancelled``
    is asked before each entry: a Ctrl-C stops a large copy at once, so the
    lab's exit cleanup does not race a copy still writing into its temp root.

    Raises:
        TreeBoundError: ``source`` passes ``bounds``.
        OSError: an entry could not be copied, or is a special file;
            ``errno.ECANCELED`` when ``cancelled()`` became true.
    """
    dest = os.fspath(target)
    dirs: list[tuple[str, str]] = []
    for entry in walk(source, skip=skip, bounds=bounds):
        if cancelled is not None and cancelled():
            raise OSError(errno.ECANCELED, "cancelled", os.fspath(source))
        made = os.path.join(dest, entry.rel)
        if entry.kind == DIR:
            os.mkdir(made, 0o700)
            dirs.append((entry.path, made))
        elif entry.kind == LINK:
            os.symlink(os.readlink(entry.path), made)
        elif entry.kind == FILE:
            shutil.copy2(entry.path, made, follow_symlinks=False)
        else:
            raise OSError(errno.EINVAL, "a FIFO, socket or device cannot be copied", entry.path)
    for src, made in reversed(dirs):  # children first: their times are set before the parent's
        shutil.copystat(src, made, follow_symlinks=False)


@dataclass
class _Frame:
    name: str
    ident: tuple[int, int]
    subdirs: list[str] | None = field(default=None)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete ``path`` and everything below it, whatever its depth; links are removed, never followed.

    Entries a command made read-only (or unsearchable) are granted to the
    owner and removed. A path that does not exist is fine.

    Raises:
        OSError: an entry could not be removed (an immutable file, a busy
            mount point, the tree moved while it was removed); its
            ``filename`` is the path of that entry.
    """
    full = os.path.abspath(os.fspath(path))
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(full)
        return
    parent, name = os.path.split(full)
    fd = os.open(parent, _TRUSTED_DIR_FLAGS)  # the caller's directory: links above the tree are its choice
    try:
        remove_below(fd, name, shown=full)
    finally:
        os.close(fd)


def remove_below(parent_fd: int, name: str, *, shown: str) -> None:
    """Remove directory ``name`` of the directory open as ``parent_fd``, and everything in it.

    One descriptor open below ``parent_fd`` at a time; ``shown`` is the
    directory's path for error messages.

    Raises:
        OSError: as :func:`remove_tree`.
    """
    fd = _open_dir(parent_fd, name, lambda: shown)
    stack = [_Frame(name, _ident(fd))]
    try:
        while stack:
            frame = stack[-1]
            if frame.subdirs is None:
                frame.subdirs = _clear_files(fd, lambda: _where(shown, stack))
            if frame.subdirs:
                child = frame.subdirs.pop()
                try:
                    child_fd = _open_dir(fd, child, lambda: _where(shown, stack) + "/" + child)
                except FileNotFoundError:
                    continue
                os.close(fd)
                fd = child_fd
                stack.append(_Frame(child, _ident(fd)))
                continue
            stack.pop()
            if not stack:
                os.close(fd)
                fd = -1
                _retry_granted(parent_fd, lambda: os.rmdir(name, dir_fd=parent_fd), lambda: shown)
                return
            try:
                up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            except PermissionError:  # an emptied directory left without search permission
                _grant(fd)
                up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            if _ident(fd) != stack[-1].ident:
                raise OSError(errno.ESTALE, "the tree was moved while the lab removed it", _where(shown, stack))
            _retry_granted(fd, lambda: os.rmdir(frame.name, dir_fd=fd),
                           lambda: _where(shown, stack) + "/" + frame.name)
    finally:
        if fd >= 0:
            os.close(fd)


def _where(shown: str, stack: list[_Frame]) -> str:
    return "/".join([shown, *(frame.name for frame in stack[1:])])


def _ident(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _grant(fd: int) -> None:
    """Give the owner read, write and search on the directory open as ``fd``."""
    try:
        mode = os.fstat(fd).st_mode
        if mode & _OWNER_ALL != _OWNER_ALL:
            os.fchmod(fd, stat.S_IMODE(mode) | _OWNER_ALL)
    except OSError:
        pass  # the retry reports the real failure


def _retry_granted(dir_fd: int, action: Callable[[], None], shown: Callable[[], str]) -> None:
    """``action``; on a permission error, again after granting the directory to its owner.

    ``shown`` gives the entry's path for the error (built only on failure: a
    deep tree's paths are long)."""
    try:
        action()
    except PermissionError:
        _grant(dir_fd)
        try:
            action()
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, shown()) from exc


def _open_dir(parent_fd: int, name: str, shown: Callable[[], str]) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        _grant(parent_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        if stat.S_ISDIR(os.lstat(name, dir_fd=parent_fd).st_mode):  # a directory, not a link
            os.chmod(name, _OWNER_ALL, dir_fd=parent_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, shown()) from exc


def _clear_files(fd: int, shown: Callable[[], str]) -> list[str]:
    """Unlink every non-directory entry of the directory open as ``fd``; the subdirectories' names."""
    with os.scandir(fd) as listing:
        items = list(listing)
    subdirs = []
    for item in items:
        if item.is_dir(follow_symlinks=False):
            subdirs.append(item.name)
            continue
        name = item.name
        try:
            _retry_granted(fd, lambda: os.unlink(name, dir_fd=fd), lambda: f"{shown()}/{name}")
        except FileNotFoundError:
            continue
    return subdirs


def open_parent(root: str | os.PathLike[str], parts: list[str]) -> int:
    """A descriptor of ``root/parts[:-1]``, each level below ``root`` opened with ``O_NOFOLLOW``; the caller
    closes it.

    Raises:
        OSError: a component is missing, a symbolic link (``ELOOP``) or not a directory.
    """
    fd = os.open(os.fspath(root), _TRUSTED_DIR_FLAGS)
    try:
        for name in parts[:-1]:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_inside(root: str | os.PathLike[str], rel: str) -> bool:
    """Remove the entry ``root/rel`` (a whole directory too) without following any link on the way.

    ``rel`` is a ``/``-separated relative path without ``..``. A missing
    entry, or one reached only through a symbolic link, is left alone.

    Returns:
        Whether something was removed.

    Raises:
        OSError: the entry exists but could not be removed.
    """
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"{rel!r} is not a path inside the task copy")
    try:
        fd = open_parent(root, parts)
    except OSError:
        return False  # missing, or behind a link planted on the way
    try:
        try:
            info = os.lstat(parts[-1], dir_fd=fd)
        except FileNotFoundError:
            return False
        shown = os.path.join(os.fspath(root), *parts)
        if stat.S_ISDIR(info.st_mode):
            remove_below(fd, parts[-1], shown=shown)
        else:
            _retry_granted(fd, lambda: os.unlink(parts[-1], dir_fd=fd), lambda: shown)
        return True
    finally:
        os.close(fd)
