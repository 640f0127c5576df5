"""The sandbox seam: one Protocol, the records it speaks, and its error.

A backend turns "run this argv in the task copy" into a ``Launch``: the argv,
environment and working directory the lab's process runner executes
unchanged (own session, process group killed on timeout). Backends never
start processes themselves, so timeouts, output bounds and cancellation stay
in one place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from lab.errors import SandboxError as SandboxError  # re-exported: raised by every backend

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""Shape of an environment variable name a caller may pass."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for every process of one sandboxed command.

    ``None`` leaves a limit as the lab's own process has it. Each limit is set
    as both the soft and the hard value, so the command cannot raise it.

    Attributes:
        max_processes: processes and threads the sandbox user may have at
            once (RLIMIT_NPROC). Under ``bwrap`` it counts only the
            sandbox's own processes (a fresh user namespace); a fork past it
            fails with EAGAIN.
        max_file_size_bytes: largest file a process may write (RLIMIT_FSIZE);
            a write past it fails with EFBIG (or SIGXFSZ where not ignored).
        max_open_files: file descriptors per process (RLIMIT_NOFILE).
        cpu_time_s: CPU seconds per process (RLIMIT_CPU); then SIGXCPU/SIGKILL.
        tmpfs_size_bytes: size of each in-sandbox tmpfs (``/tmp`` and
            ``HOME``), which lives in memory.
    """

    max_processes: int | None = 512
    max_file_size_bytes: int | None = 1 << 30
    max_open_files: int | None = 1024
    cpu_time_s: int | None = None
    tmpfs_size_bytes: int | None = 256 << 20

    def __post_init__(self) -> None:
        for name in ("max_processes", "max_file_size_bytes", "max_open_files",
                     "cpu_time_s", "tmpfs_size_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise SandboxError(f"sandbox limit {name}: expected an integer >= 1 or "
                                   f"None, got {value!r}")


@dataclass(frozen=True)
class Bind:
    """A host path made visible inside the sandbox.

    Attributes:
        source: existing host path (file, directory or unix socket).
        target: absolute path inside the sandbox.
        writable: mount read-write; default read-only. A unix socket works
            read-only: connect() is not a write to the filesystem.
    """

    source: Path
    target: PurePosixPath
    writable: bool = False

    def __post_init__(self) -> None:
        if not self.target.is_absolute() or ".." in self.target.parts:
            raise SandboxError(f"sandbox bind {str(self.source)!r}: target must be an "
                               f"absolute path without '..', got {str(self.target)!r}")

    @classmethod
    def unix_socket(cls, source: Path,
                    target: str = "/run/lab/gateway.sock") -> Bind:
        """A host unix socket (e.g. the model gateway) reachable at ``target``.

        The socket itself must allow the sandbox user to connect (mode 0666,
        or owned by it: see ``SandboxBackend.prepare``).
        """
        return cls(Path(source), PurePosixPath(target))


ARGS_FD = "<args-fd>"
"""Stands in ``Launch.argv`` for the descriptor ``Launch.fd_args`` are read from."""

SECCOMP_FD = "<seccomp-fd>"
"""Stands in ``Launch.argv`` or ``Launch.fd_args`` for the descriptor holding ``Launch.seccomp``."""


@dataclass(frozen=True)
class Launch:
    """What the process runner executes for one sandboxed command.

    Start it with :func:`spawn_args`, which puts ``fd_args`` where the
    program reads them.

    Attributes:
        argv: the argv; ``argv[0]`` is absolute or found on ``env["PATH"]``.
            An element equal to ``ARGS_FD`` is replaced by the number of the
            descriptor holding ``fd_args``.
        env: the complete environment of the started process. For ``bwrap``
            it holds no variable of the lab's own environment.
        cwd: host working directory of the started process.
        fd_args: arguments passed NUL-separated through a descriptor rather
            than on the command line (bubblewrap's ``--args FD``), so the
            sandboxed program cannot read them in ``/proc/1/cmdline``: they
            name host paths and the environment set inside.
        seccomp: a compiled seccomp filter (``struct sock_filter`` array)
            read from a descriptor (bubblewrap's ``--seccomp FD``); empty: none.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    fd_args: tuple[str, ...] = ()
    seccomp: bytes = b""


@contextmanager
def spawn_args(launch: Launch) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """The argv and ``pass_fds`` that start ``launch`` (``subprocess.Popen``).

    With ``fd_args``, they are written NUL-terminated to an anonymous
    memory file (``memfd_create``), whose number replaces ``ARGS_FD`` in
    argv; ``seccomp`` likewise goes to its own memory file, whose number
    replaces ``SECCOMP_FD`` in argv and ``fd_args``. The descriptors are
    closed when the block ends (the child keeps its own copies, which
    bubblewrap closes once read).

    Yields:
        (argv, descriptors to pass to the child).
    """
    if not launch.fd_args and not launch.seccomp:
        yield launch.argv, ()
        return
    fds: list[int] = []
    try:
        replace: dict[str, str] = {}
        if launch.seccomp:
            fds.append(_memfd("lab-sandbox-seccomp", launch.seccomp))
            replace[SECCOMP_FD] = str(fds[-1])
        fd_args = [replace.get(arg, arg) for arg in launch.fd_args]
        if launch.fd_args:
            fds.append(_memfd("lab-sandbox-args", b"".join(
                arg.encode("utf-8", "surrogateescape") + b"\0" for arg in fd_args)))
            replace[ARGS_FD] = str(fds[-1])
        yield [replace.get(arg, arg) for arg in launch.argv], tuple(fds)
    finally:
        for fd in fds:
            os.close(fd)


def _memfd(name: str, data: bytes) -> int:
    """An anonymous memory file holding ``data``, positioned at its start."""
    fd = os.memfd_create(name)
    try:
        with os.fdopen(os.dup(fd), "wb") as fh:
            fh.write(data)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


@runtime_checkable
class SandboxBackend(Protocol):
    """An isolated place where a run's commands execute.

    Implementations: ``none`` (the host itself) and ``bwrap`` (bubblewrap).
    A container backend implements the same three methods and registers a
    short name with ``lab.sandbox.registry.register_backend``.
    """

    @property
    def name(self) -> str:
        """Short registry name, e.g. ``"bwrap"``; shown in reports."""
        ...

    def inside_path(self, workspace: Path) -> PurePosixPath:
        """The path at which commands see the task copy ``workspace``."""
        ...

    def prepare(self, path: Path) -> None:
        """Make a host path (recursively) usable by sandboxed commands.

        Called once on a new task copy, and on any file the lab itself
        creates in it afterwards (the file tools), or on a socket to bind.

        Raises:
            SandboxError: the path or one of its parents cannot be reached.
        """
        ...

    def wrap(self, argv: Sequence[str], *, workspace: Path, env: Mapping[str, str],
             network: bool = False, limits: Limits = Limits(),
             binds: Sequence[Bind] = ()) -> Launch:
        """Turn ``argv`` into what to execute for it inside the sandbox.

        Args:
            argv: the command, run without a shell; ``argv[0]`` is looked up
                on the sandbox's ``PATH``.
            workspace: host path of the task copy; the command's cwd.
            env: the task's declared variables, set over the backend's base
                environment (``PATH``, ``HOME``, ``LANG``, ``TZ``, ...).
            network: grant network access (a task granted ``external``).
            limits: resource limits for every process of the command.
            binds: extra host paths to show inside (sockets, read-only dirs).

        Returns:
            A ``Launch``; nothing has run yet.

        Raises:
            SandboxError: empty argv, a bad env name, a missing workspace.
        """
        ...


def command_limits(timeout_ms: int) -> Limits:
    """Limits of one command of a run: the ``Limits`` defaults, and CPU seconds
    bounded by the command's own timeout (``timeout_ms`` rounded up, plus one)."""
    return Limits(cpu_time_s=-(-timeout_ms // 1000) + 1)


def check_request(argv: Sequence[str], workspace: Path, env: Mapping[str, str]) -> None:
    """Validation every backend's ``wrap`` shares.

    Raises:
        SandboxError: empty argv, a non-directory workspace, an env name that
            is not ``[A-Za-z_][A-Za-z0-9_]*`` or a value holding a NUL byte.
    """
    if not argv or not all(isinstance(arg, str) for arg in argv):
        raise SandboxError(f"sandbox: argv must be a non-empty list of strings, got {argv!r}")
    if not Path(workspace).is_dir():
        raise SandboxError(f"sandbox: workspace {str(workspace)!r} is not a directory")
    for key, value in env.items():
        if not ENV_NAME.match(key) or "\x00" in value:
            raise SandboxError(f"sandbox: env variable {key!r}: expected a name matching "
                               f"[A-Za-z_][A-Za-z0-9_]* and a value without NUL")


def base_env(*, path: str, home: str, tmpdir: str) -> dict[str, str]:
    """The variables every sandboxed command gets before the task's own.

    Args:
        path: ``PATH`` as seen by the command.
        home: ``HOME`` as seen by the command.
        tmpdir: ``TMPDIR`` as seen by the command.

    Returns:
        ``PATH``, ``HOME``, ``TMPDIR``, ``LANG=C.UTF-8``, ``TZ=UTC`` and
        ``PYTHONDONTWRITEBYTECODE=1`` (no ``__pycache__`` in the task copy).
    """
    return {"PATH": path, "HOME": home, "TMPDIR": tmpdir, "LANG": "C.UTF-8", "TZ": "UTC",
            "PYTHONDONTWRITEBYTECODE": "1"}


_EXEC_FAILURE = re.compile(rb"prlimit: failed to execute (?P<program>[^:\n]+): (?P<why>[^\n]+)")


def start_failure(exit_code: int | None, stderr: bytes) -> str | None:
    """Why a sandboxed command never started, or None when it ran.

    Inside the sandbox the command is started by ``prlimit``; when the program
    cannot be executed (not found, not executable) ``prlimit`` exits 127 or
    126 and says so on stderr. That is a command that *did not start*, like
    ``ProcessStartError`` on the host, not a command that failed.

    Args:
        exit_code: the wrapped process's exit code.
        stderr: its captured stderr.

    Returns:
        ``cannot start 'PROGRAM': REASON`` or None.
    """
    if exit_code not in (126, 127):
        return None
    match = _EXEC_FAILURE.search(stderr)
    if match is None:
        return None
    program = match["program"].decode("utf-8", errors="replace")
    why = match["why"].decode("utf-8", errors="replace").strip()
    return f"cannot start {program!r}: {why}"
