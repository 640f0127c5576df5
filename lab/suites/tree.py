"""One pass over a suite directory, shared by the path checks and the digest (SPEC S3, S5).

:func:`walk_suite` lists every entry of a suite once with ``os.scandir``,
whose entries carry their type, so a plain file or directory costs no
``stat`` and no path object. It skips :data:`IGNORED_NAMES` at any depth (and
a ``.git`` at the top of the suite directory, which no fixture copy holds) and
never descends into a linked directory (as ``os.walk`` does by default);
an unreadable directory lists nothing, as under ``os.walk``.

:func:`read_regular` reads a file only when it is itself a regular file:
never through a symbolic link, and never blocking on a FIFO or device.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from lab.sandbox.listing import SKIPPED_NAMES, copied

IGNORED_NAMES = SKIPPED_NAMES
"""Names skipped (at any depth) by the digest and the file checks: those a run's copy of a fixture
leaves out (:mod:`lab.sandbox.listing`; ``*.pyc`` too)."""

DIR, FILE, LINK, OTHER = "dir", "file", "link", "other"
"""Entry kinds: a directory, a regular file, a symbolic link, anything else (FIFO, socket,
device, or an entry whose type could not be read: :func:`lab.suites.paths.link_problems`
looks at it again)."""

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
    | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 20


class Entry(NamedTuple):
    """One entry under the suite directory."""

    rel: str
    """Its ``/``-separated path relative to the suite directory."""
    path: str
    """Its path: the suite directory as given, joined with ``rel``."""
    kind: str
    """:data:`DIR`, :data:`FILE`, :data:`LINK` or :data:`OTHER`, as the directory listing says (links not followed)."""


@dataclass(frozen=True)
class SuiteTree:
    """What :func:`walk_suite` found.

    Attributes:
        root: the suite directory as given (absolute, not resolved).
        entries: every entry but :data:`IGNORED_NAMES`, parents before children.
        dirs: ``rel`` of every directory reached without following a link.
    """

    root: Path
    entries: tuple[Entry, ...]
    dirs: frozenset[str]

    def has_plain_dir(self, rel: str) -> bool:
        """Whether ``rel`` (a path that :func:`~lab.suites.paths.unsafe_path` accepts) names a
        directory of the suite reached without following any link: then it resolves to
        ``root.resolve() / rel``, inside the suite and not the suite itself."""
        return rel in self.dirs or posixpath.normpath(rel) in self.dirs


def walk_suite(suite_dir: Path) -> SuiteTree:
    """List ``suite_dir`` recursively, one ``os.scandir`` per directory.

    Never raises: a directory that cannot be listed contributes nothing, and
    an entry whose type cannot be read is :data:`OTHER`.
    """
    entries: list[Entry] = []
    dirs: set[str] = set()
    pending = [(os.fspath(suite_dir), "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as listing:
                found = list(listing)
        except OSError:
            continue
        for item in found:
            name = item.name
            if not copied(name) or (name == ".git" and not prefix):  # not in a run's copy: nor in the digest
                continue
            rel = prefix + name
            try:  # most entries are files: one question each
                if item.is_file(follow_symlinks=False):
                    kind = FILE
                elif item.is_dir(follow_symlinks=False):
                    kind = DIR
                    dirs.add(rel)
                    pending.append((item.path, rel + "/"))
                elif item.is_symlink():
                    kind = LINK
                else:
                    kind = OTHER
            except OSError:
                kind = OTHER
            entries.append(Entry(rel, item.path, kind))
    return SuiteTree(root=suite_dir, entries=tuple(entries), dirs=frozenset(dirs))


class SpecialFileError(OSError):
    """The path is a FIFO, socket or device: it is neither read nor hashed."""


def read_regular(path: str | Path) -> bytes:
    """The bytes of ``path``, which must be a regular file itself.

    Opened with ``O_NOFOLLOW | O_NONBLOCK`` (a final symbolic link is refused,
    a FIFO cannot block the reader), then checked with ``fstat``.

    Raises:
        OSError: with ``errno.ELOOP`` when ``path`` is a symbolic link (check
            with :func:`os.path.islink`: a loop in a parent also gives ELOOP);
            :class:`IsADirectoryError` for a directory; :class:`SpecialFileError`
            for a FIFO, socket or device; any other failure of open or read.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            raise SpecialFileError(errno.EINVAL, "not a regular file (FIFO, socket or device)", str(path))
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
