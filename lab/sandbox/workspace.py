"""Task workspaces: copy a fixture, snapshot and diff its tree, confine paths.

A task always runs in a fresh temporary copy of its fixture (SPEC S1), never in
the user's tree. ``snapshot`` and ``diff_snapshots`` feed the
``tree-diff-within`` verifier (V5); ``resolve_inside`` is the one function that
confines a relative path to a root (S3, H2), used by tools and verifiers alike.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

from lab.errors import ProcessStartError, SandboxError, ToolError, WorkspaceError
from lab.sandbox.base import Launch, SandboxBackend, command_limits
from lab.sandbox.listing import copied
from lab.sandbox.process import minimal_env, run_launch
from lab.sandbox.walk import DIR, FILE, LINK, MAX_TREE_BYTES, TreeBoundError, copy_tree, remove_tree, walk

Snapshot = dict[str, str]
"""Posix path relative to the root → sha256 hex of the file's bytes, or
``"symlink:<target>"`` for a symbolic link (never followed), or
``"special"`` for a FIFO, socket or device."""

IGNORED_NAMES = frozenset({".git", "node_modules", "__pycache__", ".pytest_cache"})
"""Entries with these names are skipped by ``snapshot`` at any depth."""

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Reliability Lab",
    "GIT_AUTHOR_EMAIL": "lab@reliability-lab.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "Reliability Lab",
    "GIT_COMMITTER_EMAIL": "lab@reliability-lab.invalid",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    # The user's global/system git config (hooks, signing, autocrlf) must not
    # change the commit: the same fixture always yields the same hash.
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

_GIT_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class TreeDiff:
    """Files that differ between two snapshots; each list sorted.

    Attributes:
        added: paths only in the later snapshot.
        changed: paths in both whose digest differs.
        deleted: paths only in the earlier snapshot.
    """

    added: list[str]
    changed: list[str]
    deleted: list[str]

    @property
    def paths(self) -> list[str]:
        """Every added, changed or deleted path, sorted."""
        return sorted([*self.added, *self.changed, *self.deleted])

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.changed or self.deleted)

    def to_json(self) -> dict[str, Any]:
        return {"added": list(self.added), "changed": list(self.changed),
                "deleted": list(self.deleted)}


def _git(args: list[str], cwd: Path, git: str, fixture: Path,
         sandbox: SandboxBackend | None = None) -> None:
    if sandbox is None:
        launch = Launch(argv=[git, *args], env=minimal_env(cwd, GIT_IDENTITY), cwd=cwd)
    else:  # inside: a fixture's own .git/config (hooks, fsmonitor) cannot reach the host
        launch = sandbox.wrap(["git", *args], workspace=cwd, env=GIT_IDENTITY,
                              limits=command_limits(_GIT_TIMEOUT_MS))
    try:
        result = run_launch(launch, timeout_ms=_GIT_TIMEOUT_MS)
    except ProcessStartError as exc:
        raise WorkspaceError(f"fixture {str(fixture)!r}: git init failed: {exc}") from exc
    if result.exit_code != 0:
        tail = result.stderr[-500:].decode("utf-8", errors="replace").strip()
        raise WorkspaceError(
            f"fixture {str(fixture)!r}: `git {' '.join(args[:3])}` failed "
            f"(exit {result.exit_code}): {tail}")


def _git_init(workspace: Path, fixture: Path, sandbox: SandboxBackend | None) -> None:
    git = shutil.which("git") if sandbox is None else "git"
    if git is None:
        raise WorkspaceError(
            f"fixture {str(fixture)!r}: fixtureGit needs git, which is not on PATH")
    _git(["-c", "init.defaultBranch=main", "init", "-q"], workspace, git, fixture, sandbox)
    _git(["add", "-A"], workspace, git, fixture, sandbox)
    _git(["-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "--allow-empty",
          "-m", "fixture"], workspace, git, fixture, sandbox)


def create_workspace(fixture: Path, *, git_init: bool = False, prefix: str = "lab-",
                     parent: Path | None = None, sandbox: SandboxBackend | None = None,
                     cancelled: Callable[[], bool] | None = None) -> Path:
    """Copy a fixture into a fresh temporary directory.

    Symbolic links are copied as links (never followed); the fixture itself is
    only read. Entries :func:`lab.sandbox.listing.copied` leaves out (bytecode
    caches, ``.DS_Store``, a nested ``.git``) are not copied: the suite digest
    leaves out the same ones. With ``git_init`` the copy becomes a git repository with one
    commit of everything, made with a fixed identity and date, so two copies
    of the same fixture have the same commit hash.

    Args:
        fixture: directory to copy.
        git_init: run ``git init`` and commit the copy.
        prefix: prefix of the temporary directory's name.
        parent: directory to create it in (the lab's ``RunRoot``); the
            system temp dir when None.
        cancelled: asked before each entry copied; when true the copy stops
            (``WorkspaceError``, the partial copy removed).
        sandbox: the backend the run's commands use: the copy is handed to
            it (``prepare``) and ``git init`` runs inside it, so a fixture's
            own ``.git`` configuration never runs on the host. None: git on
            the host, nothing prepared.

    Returns:
        The new workspace directory (absolute, resolved).

    Raises:
        WorkspaceError: the fixture is not a directory, copying failed, or git
            is missing or failed; the message names the fixture. Nothing is
            left behind on failure.
    """
    fixture = Path(fixture)
    if not fixture.is_dir():
        raise WorkspaceError(f"fixture {str(fixture)!r} is not a directory")
    try:
        workspace = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()
    except OSError as exc:
        raise WorkspaceError(
            f"fixture {str(fixture)!r}: cannot create a temporary directory: {exc}") from exc
    try:
        copy_tree(fixture, workspace, skip=lambda name: not copied(name), cancelled=cancelled)
        if sandbox is not None:
            sandbox.prepare(workspace)
        if git_init:
            _git_init(workspace, fixture, sandbox)
    except OSError as exc:
        remove_workspace(workspace)
        raise WorkspaceError(f"fixture {str(fixture)!r}: copy failed: {exc}") from exc
    except (WorkspaceError, SandboxError):
        remove_workspace(workspace)
        raise
    return workspace


def _sha256_file(path: str, budget: list[int]) -> str:
    """sha256 of the regular file ``path`` (final link refused), charged to ``budget[0]`` bytes."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return "special"  # swapped for a FIFO or device since the listing: never read
        while chunk := handle.read(1 << 20):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise TreeBoundError(f"the task copy holds more than {MAX_TREE_BYTES >> 20} MiB of "
                                     "file content (the most the lab hashes)")
            digest.update(chunk)
    return digest.hexdigest()


def snapshot(root: Path) -> Snapshot:
    """Digest every file under ``root``, within the bounds of :mod:`lab.sandbox.walk`.

    Entries named in ``IGNORED_NAMES`` are skipped at any depth; empty
    directories do not appear (files only); links are recorded, not followed.
    The walk is iterative, so any depth is safe.

    Args:
        root: directory to scan.

    Returns:
        ``Snapshot``: posix relative path → sha256 hex / ``"symlink:<target>"``.

    Raises:
        TreeBoundError: the tree has more entries, levels or path characters
            than :class:`lab.sandbox.walk.Bounds` allow, or more than
            ``MAX_TREE_BYTES`` of file content (the message names the bound).
        WorkspaceError: a file or directory could not be read (names it).
    """
    out: Snapshot = {}
    budget = [MAX_TREE_BYTES]
    try:
        for entry in walk(root, skip=IGNORED_NAMES.__contains__):
            if entry.kind == LINK:
                out[entry.rel] = "symlink:" + os.readlink(entry.path)
            elif entry.kind == FILE:
                if entry.size > budget[0]:  # known from the listing: nothing is read
                    raise TreeBoundError(f"the task copy holds more than {MAX_TREE_BYTES >> 20} MiB of "
                                         f"file content (the most the lab hashes; {entry.rel!r} alone "
                                         f"is {entry.size} bytes)")
                out[entry.rel] = _sha256_file(entry.path, budget)
            elif entry.kind != DIR:
                out[entry.rel] = "special"
    except OSError as exc:
        raise WorkspaceError(f"cannot snapshot {str(root)!r}: {exc}") from exc
    return dict(sorted(out.items()))


def diff_snapshots(before: Snapshot, after: Snapshot) -> TreeDiff:
    """Compare two snapshots.

    Returns:
        ``TreeDiff`` with sorted ``added``, ``changed`` and ``deleted`` paths.
    """
    return TreeDiff(
        added=sorted(set(after) - set(before)),
        changed=sorted(p for p in before.keys() & after.keys() if before[p] != after[p]),
        deleted=sorted(set(before) - set(after)),
    )


def remove_workspace(path: Path) -> None:
    """Delete a workspace, including read-only files and directories, at any depth.

    A path that does not exist is fine (nothing to do); a symlink is unlinked,
    never followed. The removal is :func:`lab.sandbox.walk.remove_tree`:
    iterative, one directory descriptor at a time, links never followed.

    Raises:
        WorkspaceError: the filesystem root or the home directory was given,
            or the tree could not be removed (names the entry that stayed).
    """
    path = Path(path)
    protected = {Path(os.path.abspath(os.sep))}
    home = os.environ.get("HOME")
    if home:
        protected.add(Path(home).resolve())
    if path.resolve() in protected:
        raise WorkspaceError(f"refusing to remove {str(path)!r}: not a workspace")
    try:
        remove_tree(path)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and exc.filename != str(path) else ""
        raise WorkspaceError(f"cannot remove workspace {str(path)!r}{where}: "
                             f"{exc.strerror or exc}") from exc


def _check_relative(rel: str) -> None:
    if not isinstance(rel, str) or not rel.strip():
        raise ToolError(f"path {rel!r} is empty; give a path relative to the workspace")
    if "\x00" in rel:
        raise ToolError(f"path {rel!r} contains a NUL byte")
    if rel.startswith("~"):
        raise ToolError(f"path {rel!r} starts with '~'; give a path relative to the workspace")
    windows = PureWindowsPath(rel)
    if rel.startswith(("/", "\\")) or windows.drive or windows.root:
        raise ToolError(f"path {rel!r} is absolute; give a path relative to the workspace")


def resolve_inside(root: Path, rel: str) -> Path:
    """Resolve ``rel`` against ``root`` and prove it stays inside.

    Symbolic links are resolved (the path need not exist: the existing part is
    resolved, the rest is normalised), then the result is compared with the
    resolved root as a path, not as a string prefix.

    Args:
        root: the confining directory (a workspace).
        rel: a relative path, POSIX separators.

    Returns:
        The fully resolved absolute path (``root`` itself for ``"."``).

    Raises:
        ToolError: ``rel`` is empty, absolute (POSIX, Windows drive or UNC),
            contains NUL, starts with ``~``, escapes through ``..`` or through a
            symlink, or runs into a symlink loop.
    """
    _check_relative(rel)
    try:
        base = Path(root).resolve()
        target = (base / rel).resolve()
    except RuntimeError as exc:  # pathlib's report of a symlink loop
        raise ToolError(f"path {rel!r}: symlink loop") from exc
    except OSError as exc:
        raise ToolError(f"path {rel!r} cannot be resolved: {exc.strerror or exc}") from exc
    if not target.is_relative_to(base):
        raise ToolError(f"path {rel!r} escapes the workspace (resolves outside it)")
    return target
