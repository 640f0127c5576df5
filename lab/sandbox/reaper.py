"""The lab's temp root for task copies, and reaping what a killed lab left.

Each lab process owns one directory ``<tmp>/lab-runs-<uid>/<pid>-<random>/``
and holds an exclusive ``flock`` on the ``.lock`` file inside it for as long
as it lives; the task copies of its runs are made inside. The kernel drops
the lock when the process dies, however it dies (``kill -9`` included), so
the next lab can tell a live directory from a stale one without trusting
pids alone:

- stale = the lock can be taken *and* the pid in the name is not alive (a
  live pid with a free lock is a lab that has not locked yet, or pid reuse:
  left for a later start);
- a directory whose name is not ``<pid>-<random>`` is never touched.

``reap_stale`` kills the processes whose working directory or root is inside
a stale directory (commands of the ``none`` backend that outlived their lab;
bwrap sandboxes die with the lab through ``--die-with-parent``), waits for
them, removes the directory and returns one line for the console. The
removal is :func:`lab.sandbox.walk.remove_tree` (iterative, any depth, links
never followed); a directory it cannot remove (an immutable file) is reported
once, noted in ``.unremovable``, and tried again silently at later starts:
it never stops a command.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import select
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from lab.files import write_atomic
from lab.sandbox.base import SandboxError
from lab.sandbox.walk import remove_tree

LOCK_NAME = ".lock"
UNREMOVABLE_NAME = ".unremovable"
"""In ``lab-runs-<uid>``: the names of stale run roots that could not be removed, one a line
(each is reported once, then tried again silently at every start)."""
_NAME = re.compile(r"^(\d+)-[0-9a-f]{8,}$")
_KILL_WAIT_S = 5.0
"""Upper bound on waiting for a killed process to exit (pidfd, no polling)."""


def runs_dir(base: Path | None = None) -> Path:
    """``<base>/lab-runs-<euid>``, created mode 0711 if missing.

    0711 lets the sandbox's host user reach a task copy inside without
    listing the others. One directory per uid, so labs of different users
    never share (or reap) each other's.

    Args:
        base: parent directory; ``tempfile.gettempdir()`` when None.

    Raises:
        SandboxError: it exists but is not a directory owned by this uid, or
            group/others can write to it.
    """
    path = Path(base or tempfile.gettempdir()) / f"lab-runs-{os.geteuid()}"
    try:
        os.mkdir(path, 0o711)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SandboxError(f"cannot create the lab temp root {str(path)!r}: {exc}") from exc
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise SandboxError(f"lab temp root {str(path)!r} must be a directory owned by uid "
                           f"{os.geteuid()} and not writable by others; remove it")
    os.chmod(path, 0o711)
    return path


class RunRoot:
    """This lab process's directory for task copies, locked while it lives.

    Use ``RunRoot.create()`` (or as a context manager); ``close`` removes the
    directory and releases the lock.

    Attributes:
        path: ``<tmp>/lab-runs-<uid>/<pid>-<random>``, mode 0711.
    """

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self._lock_fd: int | None = lock_fd

    @classmethod
    def create(cls, base: Path | None = None) -> RunRoot:
        """Make and lock a new run root under ``runs_dir(base)``.

        The lock file descriptor is close-on-exec, so commands never inherit
        (and keep alive) the lock.

        Raises:
            SandboxError: the directory or its lock could not be made.
        """
        parent = runs_dir(base)
        path = parent / f"{os.getpid()}-{secrets.token_hex(6)}"
        try:
            os.mkdir(path, 0o711)
            os.chmod(path, 0o711)
            fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise SandboxError(f"cannot create a run root under {str(parent)!r}: {exc}") from exc
        return cls(path, fd)

    def close(self) -> None:
        """Remove the directory (task copies included), then drop the lock."""
        if self._lock_fd is None:
            return
        try:
            remove_tree(self.path)
        except OSError:
            pass  # left for the next start's reap_stale
        os.close(self._lock_fd)
        self._lock_fd = None

    def __enter__(self) -> RunRoot:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


@dataclass(frozen=True)
class Reaped:
    """What ``reap_stale`` cleaned.

    Attributes:
        dirs: stale run roots removed (absolute paths, sorted).
        killed: pids killed because they ran inside one of them.
        failed: run roots that could not be removed, with the reason.
    """

    dirs: list[str]
    killed: list[int]
    failed: list[str]

    @property
    def line(self) -> str:
        """One console line; empty when there was nothing to reap."""
        if not (self.dirs or self.killed or self.failed):
            return ""
        text = (f"reaped what an earlier lab left: {len(self.dirs)} run "
                f"dir{'s' if len(self.dirs) != 1 else ''}, {len(self.killed)} "
                f"process{'es' if len(self.killed) != 1 else ''}")
        if self.failed:
            text += f"; could not remove {'; '.join(self.failed)}"
        return text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_stale(path: Path) -> bool:
    match = _NAME.match(path.name)
    if match is None or not path.is_dir() or path.is_symlink():
        return False
    if _alive(int(match.group(1))):
        return False
    try:
        fd = os.open(path / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return True  # its lab died between mkdir and locking
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # a child of the dead lab still holds the lock
    finally:
        os.close(fd)
    return True


def _inside(link: str, roots: list[str]) -> bool:
    return any(link == root or link.startswith(root + os.sep) for root in roots)


def _processes_in(roots: list[str]) -> list[int]:
    """Pids whose cwd or root directory lies inside one of ``roots``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        for what in ("cwd", "root"):
            try:
                link = os.readlink(f"/proc/{entry}/{what}")
            except OSError:
                continue  # gone, or not ours to inspect
            if _inside(link.removesuffix(" (deleted)"), roots):
                found.append(int(entry))
                break
    return sorted(found)


def _kill_and_wait(pids: list[int]) -> list[int]:
    killed = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue  # already gone
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            killed.append(pid)
            # A pidfd turns readable when the process exits: no polling loop.
            select.select([fd], [], [], _KILL_WAIT_S)
        except OSError:
            pass  # exited in between, or not ours to signal
        finally:
            os.close(fd)
    return killed


def reap_stale(base: Path | None = None) -> Reaped:
    """Remove run roots no live lab owns, killing the processes inside them.

    Call once at lab start, before creating this lab's ``RunRoot``.

    Args:
        base: parent of ``lab-runs-<uid>``; ``tempfile.gettempdir()`` when None.

    Returns:
        ``Reaped``; its ``line`` is what to print (empty when nothing).

    Raises:
        SandboxError: the lab temp root itself is unusable (see ``runs_dir``).
    """
    parent = runs_dir(base)
    stale = sorted(str(entry) for entry in parent.iterdir() if _is_stale(entry))
    if not stale:
        return Reaped(dirs=[], killed=[], failed=[])
    killed = _kill_and_wait(_processes_in(stale))
    reported = _reported(parent)
    removed, failed, still = [], [], set()
    for path in stale:
        try:
            remove_tree(path)
            removed.append(path)
        except OSError as exc:
            name = os.path.basename(path)
            still.add(name)
            if name not in reported:
                where = f" at {exc.filename}" if exc.filename and exc.filename != path else ""
                failed.append(f"{path} ({exc.strerror or exc}{where}; remove it by hand)")
    if still != reported:
        _note_reported(parent, still)
    return Reaped(dirs=removed, killed=killed, failed=failed)


def _reported(parent: Path) -> set[str]:
    """Names of run roots already reported as unremovable (an unreadable list: none)."""
    try:
        text = (parent / UNREMOVABLE_NAME).read_text("utf-8", errors="replace")
    except OSError:
        return set()
    return {line for line in text.splitlines() if _NAME.match(line)}


def _note_reported(parent: Path, names: set[str]) -> None:
    """Keep ``names`` as the reported list (what no longer fails drops out)."""
    try:
        if names:
            write_atomic(parent / UNREMOVABLE_NAME, "".join(f"{n}\n" for n in sorted(names)).encode())
        else:
            (parent / UNREMOVABLE_NAME).unlink(missing_ok=True)
    except OSError:
        pass  # then it is reported again next time: better than not at all
