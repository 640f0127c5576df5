"""That bwrap starts a sandbox on this host, remembered between commands.

``sandbox=auto`` (the default) and ``sandbox=bwrap`` start a probe sandbox to
find out whether bubblewrap works here (about one command's start-up, 40 ms
and more under load), which a command that executes no run does not need. A
successful probe is remembered in ``<user cache dir>/sandbox/`` (``lab.stamps.shared_cache_dir``) under a
fingerprint of everything this host's answer depends on (:func:`fingerprint`):
the ``bwrap`` program found on ``PATH`` and its stamp, the user and group ids,
the boot, the namespaces the lab runs in, the kernel's user-namespace limits,
the process's capabilities and seccomp state, the temp directory variables and
the lab's sandbox code. Any change means a new probe.

Only success is remembered: a host where bwrap fails is probed by every
command (so a fix takes effect at once), and a command with runs to execute
confirms the remembered answer with a real probe before it plans them
(``lab.execute.sandboxing.confirm_choice``, ``lab.build.graph``): a stale memo
is forgotten and the runs are planned under the backend that holds, so no run
ever executes under a backend other than the one its inputs name.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from lab.canonical import canonical_hash
from lab.stamps import caching, read_entry, shared_cache_dir, stamp, write_entry

KIND = "sandbox-probe"
LIMIT_FILES = ("/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
               "/proc/sys/user/max_mnt_namespaces", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup")
STATUS_FIELDS = frozenset({"Uid", "Gid", "CapPrm", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Seccomp_filters"})
SANDBOX_CODE = Path(__file__).resolve().parent.parent / "sandbox"


def fingerprint() -> dict[str, Any]:
    """What the outcome of a bwrap probe on this host depends on (JSON-able; see the module docstring)."""
    program = shutil.which("bwrap")
    status = _read("/proc/self/status") or ""
    return {
        "bwrap": program, "bwrapStamp": stamp(program) if program else None,
        "path": os.environ.get("PATH"), "tmp": [os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")],
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid()],
        "boot": _read("/proc/sys/kernel/random/boot_id"),
        "namespaces": {name: _link(f"/proc/self/ns/{name}") for name in NAMESPACES},
        "limits": {file: _read(file) for file in LIMIT_FILES},
        "process": sorted(line for line in status.splitlines() if line.partition(":")[0] in STATUS_FIELDS),
        "code": {str(p): stamp(p) for p in sorted(SANDBOX_CODE.glob("*.py"))},
    }


def _entry_file(host: dict[str, Any]) -> Path:
    return shared_cache_dir() / "sandbox" / f"{canonical_hash(host)}.json"


def bwrap_remembered() -> bool:
    """Whether a bwrap probe succeeded earlier on this host, in the state it is in now."""
    if not caching():
        return False
    host = fingerprint()
    entry = read_entry(_entry_file(host), KIND)
    return entry is not None and entry.get("fingerprint") == host and entry.get("works") is True


def remember_bwrap() -> None:
    """Remember that a bwrap probe succeeded (call right after one did; not with ``LAB_NO_CACHE``)."""
    if not caching():
        return
    host = fingerprint()
    write_entry(_entry_file(host), KIND, {"fingerprint": host, "works": True})


def forget_bwrap() -> None:
    """Forget the remembered probe of this host's present state (a real probe disagreed)."""
    try:
        _entry_file(fingerprint()).unlink(missing_ok=True)
    except OSError:
        pass


def _read(file: str) -> str | None:
    try:
        with open(file, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _link(file: str) -> str | None:
    try:
        return os.readlink(file)
    except OSError:
        return None
