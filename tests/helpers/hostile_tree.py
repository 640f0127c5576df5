"""Trees an agent can leave in its task copy: deep nesting, immutable files, sparse giants.

``nest`` builds a chain of directories the way an agent does it in one line
(``mkdir d; cd d`` in a loop), so no path ever gets long and no helper
recurses. ``fast_dir`` gives a directory on tmpfs when there is one: removing
5,000 levels costs ~3 ms per ``rmdir`` on a journalled disk and microseconds
on tmpfs. ``immutable`` sets the immutable attribute with ``chattr +i`` where
the filesystem and the user's capabilities allow it (root on ext4, xfs,
btrfs, overlayfs over them) and says so when they do not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def nest(root: Path, levels: int, name: str = "d") -> Path:
    """``levels`` directories ``name`` inside each other under ``root``; the innermost's path.

    Built with descriptors (``mkdir`` relative to the last level), as deep as asked.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as leaf:
            leaf.write("the bottom\n")
    finally:
        os.close(fd)
    return root.joinpath(*[name] * min(levels, 10))  # a usable prefix; the full path may exceed PATH_MAX


@contextmanager
def fast_dir(fallback: Path) -> Iterator[Path]:
    """A fresh directory on tmpfs (``/dev/shm``) when writable, else ``fallback``; removed after on tmpfs."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        made = Path(tempfile.mkdtemp(prefix="lab-test-", dir=shm))
        try:
            yield made
        finally:
            subprocess.run(["rm", "-rf", "--one-file-system", str(made)], check=False)
    else:
        fallback.mkdir(parents=True, exist_ok=True)
        yield fallback


def immutable(path: Path) -> bool:
    """Set the immutable attribute on ``path`` (``chattr +i``); whether it holds (root, a supporting filesystem).

    Tried first on a probe file beside it, so ``path`` is never lost when the attribute does not hold.
    """
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    probe = path.parent / f".immutable-probe-{os.getpid()}"
    probe.write_text("probe\n")
    try:
        if subprocess.run([chattr, "+i", str(probe)], capture_output=True, check=False).returncode != 0:
            return False
        try:
            os.unlink(probe)
            return False  # unlinked anyway: the attribute does not hold here
        except PermissionError:
            pass
    finally:
        release(probe)
        probe.unlink(missing_ok=True)
    return subprocess.run([chattr, "+i", str(path)], capture_output=True, check=False).returncode == 0


def release(path: Path) -> None:
    """Clear the immutable attribute again (``chattr -i``), if the file is still there."""
    if os.path.lexists(path) and shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
