"""What of the host filesystem a bubblewrap sandbox shows, and how.

Three things live here, apart from the argv builder in ``bwrap.py``:

- the host's top-level layout (``/bin`` a symlink into ``/usr`` on merged-usr
  distributions, a real directory elsewhere), mirrored inside;
- the sandbox's own ``/etc``: a directory holding a generated ``passwd``,
  ``group``, ``hosts`` and ``nsswitch.conf`` (one user ``lab``, uid 1000) and
  empty mount points for the few host entries programs need, written once per
  host user into a content-addressed directory under the temp dir and bound
  read-only as a whole, so the host's account names never show inside;
- which host ``/etc`` entries are bound onto those mount points.

One bind for ``/etc`` instead of one per file: every bind mount costs bwrap
a few syscalls and a pass over ``/proc/self/mountinfo`` (see
docs/sandbox.md, "Overhead").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from lab.sandbox.base import SandboxError
from lab.sandbox.walk import FIXTURE_BOUNDS, walk

SANDBOX_UID = 1000
"""The uid (and gid) commands run as inside the sandbox."""

SANDBOX_USER = "lab"
SANDBOX_HOME = "/home/lab"

TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
"""Top-level entries mirrored from the host (symlink or read-only bind)."""

ETC_ALWAYS: dict[str, bool] = {"ld.so.cache": False, "alternatives": True}
"""Host ``/etc`` entries bound read-only when present (name → is a directory):
the dynamic linker's cache (Debian's multiarch libraries are found only
through it) and the alternatives symlinks (``/usr/bin/awk`` points there).
Not the host's git, shell or Python configuration."""

ETC_NETWORK: dict[str, bool] = {
    "resolv.conf": False, "gai.conf": False, "host.conf": False, "protocols": False,
    "services": False, "ssl": True, "ca-certificates": True, "pki": True}
"""Added only when the command is granted the network: name resolution,
service names and the certificate stores."""

SUPPORT_FILES: dict[str, str] = {
    "passwd": (f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:{SANDBOX_USER}:"
               f"{SANDBOX_HOME}:/bin/sh\n"
               "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"),
    "group": f"{SANDBOX_USER}:x:{SANDBOX_UID}:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1\tlocalhost lab\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "nsswitch.conf": ("passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                      "networks: files\nprotocols: files\nservices: files\n"),
}
"""The sandbox's generated ``/etc`` files (name → content)."""

_MOUNT_POINTS = {**ETC_ALWAYS, **ETC_NETWORK}
"""Empty files and directories in the support ``/etc`` for host entries to be
bound onto: the support directory is mounted read-only, so bwrap could not
create them."""


def top_level_args(root: Path = Path("/")) -> list[str]:
    """bwrap arguments that mirror ``/bin``, ``/lib64``... of the host.

    Args:
        root: the host root; a test may point at a fake tree.

    Returns:
        ``--symlink <target> /<name>`` for each symlink (its target as
        written, e.g. ``usr/bin``) and ``--ro-bind`` for each real directory.
    """
    args: list[str] = []
    for name in TOP_LEVEL:
        entry = root / name
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry), f"/{name}"]
        elif entry.is_dir():
            args += ["--ro-bind", str(entry), f"/{name}"]
    return args


def etc_args(network: bool, root: Path = Path("/")) -> list[str]:
    """``--ro-bind-try`` arguments for the host ``/etc`` entries in use.

    An entry is bound only when it exists on the host as the kind (file or
    directory, symlinks followed) its mount point has.
    """
    names = {**ETC_ALWAYS, **(ETC_NETWORK if network else {})}
    args: list[str] = []
    for name, is_dir in names.items():
        source = root / "etc" / name
        if source.is_dir() if is_dir else source.is_file():
            args += ["--ro-bind-try", str(source), f"/etc/{name}"]
    return args


def _digest() -> str:
    layout = sorted(SUPPORT_FILES.items()) + sorted((k, str(v)) for k, v in _MOUNT_POINTS.items())
    data = "".join(f"{name}\0{text}\0" for name, text in layout)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _is_ours(path: Path, euid: int) -> bool:
    """True when ``path`` is a complete support dir of ours nobody else can change."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != euid or info.st_mode & 0o022:
        raise SandboxError(f"sandbox support directory {str(path)!r} is not a directory "
                           f"owned by uid {euid} and writable only by it; remove it")
    for name, text in SUPPORT_FILES.items():
        entry = path / name
        if not entry.is_file() or entry.is_symlink() or entry.read_text("utf-8") != text:
            raise SandboxError(f"sandbox support file {str(entry)!r} differs from what the "
                               f"lab writes; remove {str(path)!r}")
    for name, is_dir in _MOUNT_POINTS.items():
        entry = path / name
        if entry.is_symlink() or not (entry.is_dir() if is_dir else entry.is_file()):
            raise SandboxError(f"sandbox mount point {str(entry)!r} is missing or of the "
                               f"wrong kind; remove {str(path)!r}")
    return True


def _write(staging: Path) -> None:
    for name, text in SUPPORT_FILES.items():
        (staging / name).write_text(text, "utf-8")
        os.chmod(staging / name, 0o644)
    for name, is_dir in _MOUNT_POINTS.items():
        if is_dir:
            os.mkdir(staging / name, 0o755)
        else:
            (staging / name).touch(0o644)
    os.chmod(staging, 0o755)


def support_dir(tmp: Path | None = None) -> Path:
    """The directory bound read-only as the sandbox's ``/etc``.

    Named by the content's digest and the lab's uid, written atomically (a
    private temp dir renamed into place) and checked on reuse, so several labs
    share one copy and a file planted by someone else is refused. Mode 0755:
    the sandbox's host user must be able to read it.

    Args:
        tmp: parent directory; ``tempfile.gettempdir()`` when None.

    Returns:
        The directory: every name of ``SUPPORT_FILES`` with its content, and
        an empty file or directory for every host entry that may be bound.

    Raises:
        SandboxError: an existing directory of that name is not ours or was
            changed; the message names it.
    """
    euid = os.geteuid()
    parent = Path(tmp or tempfile.gettempdir())
    final = parent / f"lab-sandbox-etc-{euid}-{_digest()}"
    if _is_ours(final, euid):
        return final
    staging = Path(tempfile.mkdtemp(prefix=".lab-sandbox-etc-", dir=parent))
    try:
        _write(staging)
        try:
            os.rename(staging, final)
        except OSError:
            pass  # another lab won the race; its copy is checked below
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not _is_ours(final, euid):
        raise SandboxError(f"cannot create the sandbox support directory {str(final)!r}")
    return final


def unreachable_parent(path: Path, uid: int) -> Path | None:
    """The first ancestor of ``path`` that host user ``uid`` cannot search.

    Group permissions are not considered: the sandbox's host user has no
    supplementary groups. Returns None when every ancestor is searchable.
    """
    path = Path(os.path.abspath(path))
    for parent in reversed(path.parents):
        info = os.stat(parent)
        bit = stat.S_IXUSR if info.st_uid == uid else stat.S_IXOTH
        if not info.st_mode & bit:
            return parent
    return None


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """``lchown`` ``path`` and, for a directory, everything below it.

    Symlinks are changed themselves, never followed, so a link planted in
    the task copy cannot redirect the change to a host file.

    Raises:
        OSError: an entry could not be changed.
        TreeBoundError: the tree passes :data:`lab.sandbox.walk.FIXTURE_BOUNDS`.
    """
    os.lchown(path, uid, gid)
    if path.is_symlink() or not path.is_dir():
        return
    for entry in walk(path, bounds=FIXTURE_BOUNDS):  # iterative: any depth
        os.lchown(entry.path, uid, gid)
