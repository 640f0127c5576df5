"""The ``bwrap`` backend: each command in a fresh bubblewrap sandbox.

No daemon and no root needed: bubblewrap (Debian package ``bubblewrap``)
creates user, mount, pid, ipc, uts, cgroup and network namespaces, shows
``/usr`` and a few ``/etc`` files read-only, the task copy read-write at
``/workspace``, and nothing else of the host. Every flag is explained in
docs/sandbox.md.

When the lab runs as root, the sandbox is started through ``setpriv`` as an
unprivileged host user (``host_uid``, default 65534): the kernel never
enforces RLIMIT_NPROC for processes whose real uid is host root, so without
the drop a fork bomb would not be stopped. The task copy is then chowned to
that user (``prepare``), and every bound host path must be searchable by it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from lab.sandbox import hostfs, seccomp
from lab.sandbox.base import (
    ARGS_FD,
    SECCOMP_FD,
    Bind,
    Launch,
    Limits,
    SandboxError,
    base_env,
    check_request,
)

WORKSPACE = PurePosixPath("/workspace")
"""Where every task copy appears inside: the same path in every run, so
prompts, tool outputs and recorded requests do not vary with a temp path."""

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` inside the sandbox (``/bin`` is ``/usr/bin`` on merged-usr hosts)."""

INSTALL_HINT = "apt-get install bubblewrap"

_VERSION_TIMEOUT_S = 10


def _version(executable: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True,
                             timeout=_VERSION_TIMEOUT_S, check=False).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"sandbox bwrap: cannot run {executable!r} --version: {exc}") from exc
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    if match is None:
        raise SandboxError(f"sandbox bwrap: cannot read the version of {executable!r}: "
                           f"got {out.strip()[:80]!r}")
    return tuple(int(part) for part in match.groups())


def _prlimit_args(prlimit: str | None, limits: Limits) -> list[str]:
    pairs = [("--nproc", limits.max_processes), ("--fsize", limits.max_file_size_bytes),
             ("--nofile", limits.max_open_files), ("--cpu", limits.cpu_time_s)]
    flags = [f"{flag}={value}:{value}" for flag, value in pairs if value is not None]
    if not flags:
        return []
    if prlimit is None:
        raise SandboxError("sandbox bwrap: resource limits need prlimit (util-linux) under "
                           "/usr; install util-linux or pass Limits with every field None")
    return [prlimit, *flags, "--"]


def _python_binds() -> tuple[list[Bind], str]:
    """Read-only binds of the lab's own interpreter and the PATH entry for it."""
    prefixes = {Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(sys.base_prefix))}
    binds = [Bind(prefix, PurePosixPath(prefix)) for prefix in sorted(prefixes)
             if not str(prefix).startswith("/usr/")]
    return binds, str(Path(sys.prefix) / "bin")


class BwrapBackend:
    """Builds bubblewrap argv for one command.

    Args:
        executable: the bwrap program; found on ``PATH`` when None.
        host_uid: host uid (and gid) the sandbox runs as when the lab is
            root; ignored otherwise (the lab's own uid is used).
        expose_python: also bind the lab's interpreter (``sys.prefix`` and
            ``sys.base_prefix``, resolved) read-only at their host paths and
            put ``sys.prefix/bin`` first on ``PATH``, so ``python3 -m pytest``
            finds the lab venv's packages. Off by default: commands get the
            distribution's ``/usr/bin/python3``.

    Raises:
        SandboxError: bwrap is missing or older than 0.5, or (as root)
            ``setpriv`` is missing, or ``host_uid`` is 0; the message names
            the fix.
    """

    def __init__(self, *, executable: str | None = None, host_uid: int = 65534,
                 expose_python: bool = False) -> None:
        if isinstance(host_uid, bool) or not 0 < host_uid < 2**32 - 1:
            raise SandboxError(f"sandbox bwrap: host_uid must be a non-root uid, got {host_uid!r}")
        found = executable or shutil.which("bwrap")
        if found is None:
            raise SandboxError(f"sandbox bwrap: the bwrap program is not on PATH; "
                               f"install it: {INSTALL_HINT}")
        self.executable = found
        self.version = _version(found)
        if self.version < (0, 5, 0):
            raise SandboxError(f"sandbox bwrap: {found!r} is version "
                               f"{'.'.join(map(str, self.version))}; 0.5.0 or newer is needed")
        self.prlimit = shutil.which("prlimit", path="/usr/bin:/usr/sbin")
        env_program = shutil.which("env", path="/usr/bin:/bin")
        if env_program is None:
            raise SandboxError("sandbox bwrap: /usr/bin/env (coreutils) is missing")
        # bwrap's own environment is what pid 1 inside shows in /proc/1/environ;
        # `env -i` empties it whatever environment the runner passes.
        self._clear = [env_program, "-i"]
        self.drop_to: int | None = host_uid if os.geteuid() == 0 else None
        self._setpriv: list[str] = []
        if self.drop_to is not None:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                raise SandboxError("sandbox bwrap: running as root needs setpriv (util-linux) "
                                   "to start the sandbox as an unprivileged user")
            self._setpriv = [setpriv, f"--reuid={host_uid}", f"--regid={host_uid}",
                             "--clear-groups", "--"]
        self._python: tuple[list[Bind], str] | None = None
        if expose_python:
            self._python = _python_binds()
            for bind in self._python[0]:
                self._check_reachable(bind.source)
        self._support: Path | None = None
        # No keyring, and no ptrace of pid 1 (bwrap, which holds the options): see seccomp.py.
        self.seccomp = seccomp.filter_program()
        self._proc_masks = [path for path in ("/proc/keys", "/proc/key-users")
                            if os.path.exists(path)]

    @property
    def name(self) -> str:
        """``"bwrap"``."""
        return "bwrap"

    def inside_path(self, workspace: Path) -> PurePosixPath:
        """Always ``/workspace``."""
        return WORKSPACE

    def _check_reachable(self, path: Path) -> None:
        if self.drop_to is None:
            return
        blocked = hostfs.unreachable_parent(path, self.drop_to)
        if blocked is not None:
            raise SandboxError(
                f"sandbox bwrap: {str(path)!r} cannot be shown inside: its parent "
                f"{str(blocked)!r} is not searchable by the sandbox's host uid {self.drop_to} "
                f"(the lab runs as root, so the sandbox runs as uid {self.drop_to}); "
                f"move it or give others search permission (chmod o+x)")

    def prepare(self, path: Path) -> None:
        """Make ``path`` usable inside: as root, chown it (recursively) to ``host_uid``.

        Without root nothing changes: commands run as the lab's own user.

        Raises:
            SandboxError: ``path`` is missing, or a parent is not searchable
                by the sandbox's host user.
        """
        path = Path(path)
        if not os.path.lexists(path):
            raise SandboxError(f"sandbox bwrap: cannot prepare {str(path)!r}: it does not exist")
        if self.drop_to is None:
            return
        self._check_reachable(path)
        try:
            hostfs.chown_tree(path, self.drop_to, self.drop_to)
        except OSError as exc:
            raise SandboxError(f"sandbox bwrap: cannot hand {str(path)!r} to uid "
                               f"{self.drop_to}: {exc}") from exc

    def _env(self, env: Mapping[str, str]) -> dict[str, str]:
        path = SANDBOX_PATH
        if self._python is not None:
            path = f"{self._python[1]}:{path}"
        full = base_env(path=path, home=hostfs.SANDBOX_HOME, tmpdir="/tmp")
        full.update({"USER": hostfs.SANDBOX_USER, "LOGNAME": hostfs.SANDBOX_USER})
        full.update(env)
        return full

    def _namespace_args(self, network: bool) -> list[str]:
        args = ["--unshare-all", "--unshare-user"]
        if network:
            args.append("--share-net")
        if self.version >= (0, 8, 0):
            args.append("--disable-userns")
        uid = str(hostfs.SANDBOX_UID)
        return [*args, "--uid", uid, "--gid", uid, "--hostname", "lab",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL"]

    def _filesystem_args(self, workspace: Path, network: bool, limits: Limits,
                         binds: Sequence[Bind]) -> list[str]:
        if self._support is None:
            self._support = hostfs.support_dir()
        args = ["--ro-bind", "/usr", "/usr", *hostfs.top_level_args(),
                "--ro-bind", str(self._support), "/etc", *hostfs.etc_args(network)]
        args += ["--proc", "/proc", "--tmpfs", "/proc/1", "--dev", "/dev"]
        # /proc/1 is bwrap's init, whose memory holds the options; the key lists name
        # the keys of every process of the same host uid.
        for path in self._proc_masks:
            args += ["--ro-bind", "/dev/null", path]
        # /dev/shm gets its own bounded tmpfs; /dev itself is made read-only
        # below (bwrap's /dev tmpfs belongs to the sandbox user, unbounded).
        for mount in ("/dev/shm", "/tmp", hostfs.SANDBOX_HOME):
            if limits.tmpfs_size_bytes is not None and self.version >= (0, 7, 0):
                args += ["--size", str(limits.tmpfs_size_bytes)]
            args += ["--tmpfs", mount]
        args += ["--bind", str(workspace), str(WORKSPACE)]
        for bind in [*(self._python[0] if self._python else []), *binds]:
            if not os.path.lexists(bind.source):
                raise SandboxError(f"sandbox bwrap: bind source {str(bind.source)!r} "
                                   f"does not exist")
            self._check_reachable(bind.source)
            args += ["--bind" if bind.writable else "--ro-bind", str(bind.source),
                     str(bind.target)]
        # Last: later mounts would need the root writable to create their
        # mount points; /tmp, HOME and /workspace are mounts of their own.
        return [*args, "--remount-ro", "/proc/1", "--remount-ro", "/dev", "--remount-ro", "/",
                "--chdir", str(WORKSPACE)]

    def wrap(self, argv: Sequence[str], *, workspace: Path, env: Mapping[str, str],
             network: bool = False, limits: Limits = Limits(),
             binds: Sequence[Bind] = ()) -> Launch:
        """The bwrap (and, as root, setpriv) argv that runs ``argv`` inside.

        Inside, the command runs as uid 1000 in ``/workspace`` with
        ``HOME=/home/lab`` (tmpfs), ``/tmp`` (tmpfs), ``PATH=/usr/local/bin:
        /usr/bin:/bin`` and only ``base_env`` plus ``env`` set; ``limits`` are
        applied with ``prlimit`` inside the sandbox's own user namespace.

        Raises:
            SandboxError: a bad request (see ``check_request``), a missing
                bind source, a path the sandbox user cannot reach, a task copy
                not yet ``prepare``d (lab running as root), or limits without
                prlimit.
        """
        check_request(argv, workspace, env)
        workspace = Path(workspace).resolve()
        self._check_reachable(workspace)
        if self.drop_to is not None and workspace.stat().st_uid != self.drop_to:
            raise SandboxError(f"sandbox bwrap: task copy {str(workspace)!r} is not owned by "
                               f"the sandbox's host uid {self.drop_to}; call prepare() on it first")
        inner_env = self._env(env)
        setenv: list[str] = ["--clearenv"]
        for key, value in sorted(inner_env.items()):
            setenv += ["--setenv", key, value]
        # The options name host paths and the inner environment: bwrap reads them from a
        # descriptor (--args), so /proc/1/cmdline inside (bwrap itself) does not show them.
        options = (*self._namespace_args(network), *self._filesystem_args(workspace, network, limits, binds),
                   *setenv, *(("--seccomp", SECCOMP_FD) if self.seccomp else ()))
        command = [*self._clear, *self._setpriv, self.executable, "--args", ARGS_FD,
                   "--", *_prlimit_args(self.prlimit, limits), *argv]
        return Launch(argv=command, env=inner_env, cwd=workspace, fd_args=options,
                      seccomp=self.seccomp or b"")
