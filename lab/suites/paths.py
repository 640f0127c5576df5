"""Path safety and the content digest of a suite directory (SPEC S3, S5).

Every path a suite names (a task's ``fixture``, a verifier's ``path`` or
``allowed`` entry) must be relative and stay inside the suite or the task
copy. Symbolic links anywhere in the suite must resolve inside it, and links
inside a fixture must be relative and resolve inside that fixture, because the
task copy keeps links as links: an absolute or escaping link would point from
the copy back into the user's tree.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Collection
from pathlib import Path, PurePosixPath, PureWindowsPath

from lab.errors import SuiteError
from lab.suites.text import excerpt
from lab.suites.tree import DIR, FILE, IGNORED_NAMES, LINK, OTHER, SpecialFileError, SuiteTree, read_regular, walk_suite

__all__ = ["IGNORED_NAMES", "SUITE_CASSETTES", "fixture_problem", "link_problems", "suite_digest", "unsafe_path"]

_PLAIN_PATH = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*/?")

SUITE_CASSETTES = "cassettes"
"""The directory inside a suite outside the checkout that holds its cassettes."""


def unsafe_path(rel: str) -> str | None:
    """Why ``rel`` is not a safe relative path, or None when it is (SPEC S3).

    Rejects NUL bytes and other control characters, text that is not valid
    Unicode, a leading ``~``, POSIX and Windows absolute forms (``/x``,
    ``C:\\x``, drive-relative ``C:x``, ``\\\\server\\share``), backslashes,
    ``..`` segments and paths that name the root itself (``.``, ``./``).

    Args:
        rel: the path exactly as written in suite.json.

    Returns:
        A short explanation naming the path, or None.
    """
    if _PLAIN_PATH.fullmatch(rel) and ".." not in rel.split("/") and rel not in {".", "./"}:
        return None  # the common case, decided without building path objects
    if "\x00" in rel:
        return "path contains a NUL byte"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in rel):
        return f"path {excerpt(rel)} contains a control character"
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return f"path {excerpt(rel)} is not valid Unicode text"
    if rel.startswith("~"):
        return f"path {excerpt(rel)} starts with '~'; use a path relative to the suite"
    windows = PureWindowsPath(rel)
    if PurePosixPath(rel).is_absolute() or windows.is_absolute() or windows.drive or windows.root:
        return f"path {excerpt(rel)} is absolute; use a relative path"
    if "\\" in rel:
        return f"path {excerpt(rel)} contains a backslash; use '/' separators"
    parts = PurePosixPath(rel).parts
    if ".." in parts:
        return f"path {excerpt(rel)} contains '..'; it must stay inside"
    if not parts:
        return f"path {excerpt(rel)} names the directory itself; name something inside it"
    return None


def fixture_problem(suite_dir: Path, rel: str) -> str | None:
    """Why fixture ``rel`` (already :func:`unsafe_path`-clean) is unusable, or None.

    The fixture must resolve (following links) to a directory strictly inside
    the suite directory.
    """
    root = suite_dir.resolve()
    try:
        target = (suite_dir / rel).resolve()
        if not target.is_relative_to(root):
            return f"fixture {excerpt(rel)} resolves outside the suite directory"
        if target == root:
            return f"fixture {excerpt(rel)} is the suite directory itself; use a subdirectory"
        if not target.exists():
            return f"fixture directory {excerpt(rel)} does not exist"
        if not target.is_dir():
            return f"fixture {excerpt(rel)} is not a directory"
    except (OSError, RuntimeError, ValueError) as exc:  # loops, names too long, odd bytes
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"fixture {excerpt(rel)} cannot be resolved: {reason}"
    return None


def link_problems(tree: SuiteTree, fixtures: Collection[str]) -> list[tuple[str | None, str]]:
    """Symbolic links and special files in the suite that make it unsafe.

    Args:
        tree: the suite directory as :func:`~lab.suites.tree.walk_suite` listed it.
        fixtures: every fixture path, as written in suite.json, that passed
            :func:`fixture_problem`.

    Returns:
        ``(fixture, message)`` pairs sorted by the offending entry's path;
        ``fixture`` is the fixture whose rule it breaks, or None when the
        entry breaks the suite-wide rule. A link must resolve inside the
        suite; a link inside a fixture must also be relative and resolve
        inside that fixture (and every fixture enclosing it). FIFOs, sockets
        and devices are refused: they can be neither copied nor hashed.
        Plain files and directories cost nothing here: only links and
        special entries are looked at (and only then are the fixtures resolved).
    """
    suspects = [entry for entry in tree.entries if entry.kind in (LINK, OTHER)]
    if not suspects:
        return []
    suite_dir = tree.root
    root = suite_dir.resolve()
    by_target: dict[Path, list[str]] = {}
    for fixture_rel in fixtures:
        by_target.setdefault((suite_dir / fixture_rel).resolve(), []).append(fixture_rel)
    found: list[tuple[str, str | None, str]] = []
    for entry in suspects:
        path = Path(entry.path)
        owner, problem = _entry_problem(path, entry.rel, root, _owning_fixtures(path, by_target))
        if problem:
            found.append((entry.rel, owner, problem))
    return [(owner, message) for _, owner, message in sorted(found, key=lambda f: f[0])]


def _owning_fixtures(entry: Path, by_target: dict[Path, list[str]]) -> list[tuple[str, Path]]:
    """Fixtures holding ``entry``, innermost first (judged by the entry's resolved parent).

    Looks up each enclosing directory, so the cost is the entry's depth, not the number of fixtures.
    """
    try:
        parent = entry.parent.resolve()
    except (OSError, RuntimeError):
        return []
    return [(rel, directory) for directory in (parent, *parent.parents) for rel in by_target.get(directory, [])]


def _entry_problem(entry: Path, rel: str, root: Path,
                   owners: list[tuple[str, Path]]) -> tuple[str | None, str | None]:
    first = owners[0][0] if owners else None
    try:
        mode = entry.lstat().st_mode
    except OSError as exc:
        return first, f"{rel}: cannot be read: {exc.strerror}"
    if not stat.S_ISLNK(mode):
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            return None, None
        return first, f"{rel}: not a regular file or directory (FIFO, socket or device)"
    try:
        link = os.readlink(entry)
        target = entry.resolve()
    except (OSError, RuntimeError):
        return first, f"{rel}: symlink loop or unreadable symlink"
    if not target.is_relative_to(root):
        return first, f"{rel}: symlink resolves outside the suite directory"
    for owner, fixture in owners:
        if os.path.isabs(link) or not target.is_relative_to(fixture):
            return owner, (f"{rel}: symlink {link!r} must be relative and stay inside fixture "
                           f"{owner!r} (the task copy keeps links as links)")
    return None, None


def suite_digest(suite_dir: Path, tree: SuiteTree | None = None) -> str:
    """sha256 hex over every file of the suite: sorted relative path and bytes.

    Covers suite.json, every fixture file and every other file in the suite
    directory (e.g. the scripted provider's ``scripts/``), listed by the rule a
    run's copy of a fixture is made by (:func:`lab.sandbox.listing.copied`:
    ``__pycache__``, ``.pytest_cache``, ``.git``, ``.DS_Store``, ``*.pyc`` are
    in neither), and leaves out the top-level ``cassettes/`` (recordings of a suite outside the checkout
    live there; recording must not change the suite's digest).
    Symlinks contribute their target text, not the file they point to.
    Each entry is ``<posix path> NUL sha256(bytes)``, in sorted path order.

    Args:
        suite_dir: the suite directory.
        tree: its listing when the caller has one (:func:`~lab.suites.tree.walk_suite`);
            listed here otherwise.

    Raises:
        SuiteError: a file cannot be read, or is not a regular file or link.
    """
    tree = walk_suite(suite_dir) if tree is None else tree
    digest = hashlib.sha256()
    files: list[tuple[str, str, bool]] = []
    for rel, path, kind in sorted(tree.entries):
        if kind == DIR or rel.partition("/")[0] == SUITE_CASSETTES:
            continue
        if kind == OTHER:  # the listing could not tell: ask lstat, as for any entry before
            try:
                mode = os.lstat(path).st_mode
            except OSError as exc:
                raise SuiteError([f"suite {suite_dir.name}: {path}: cannot be read: {exc.strerror}"]) from None
            if stat.S_ISDIR(mode):
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                raise SuiteError([f"suite {suite_dir.name}: {path}: not a regular file"])
            kind = LINK if stat.S_ISLNK(mode) else FILE
        files.append((rel, path, kind == LINK))
    for rel, path, is_link in files:
        try:
            data = ("symlink:" + os.readlink(path)).encode("utf-8", "surrogateescape") if is_link \
                else read_regular(path)
        except SpecialFileError:
            raise SuiteError([f"suite {suite_dir.name}: {path}: not a regular file"]) from None
        except OSError as exc:
            raise SuiteError([f"suite {suite_dir.name}: {rel}: cannot be read: {exc.strerror}"]) from None
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()
