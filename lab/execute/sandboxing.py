"""The sandbox of one lab process: resolved once, checked against the suite.

``open_sandbox`` is called where a command's ``EvalContext`` is built
(``lab.build.graph.prepare``), before the first run:

- the ``sandbox=`` backend is resolved once per lab process (``auto`` runs
  one probe sandbox); the ``auto`` fallback warning is printed once;
- stale task copies an earlier lab left (``kill -9``) are reaped, with one
  line saying what was cleaned;
- this process's ``RunRoot`` (the temp root for task copies) is created and
  removed at exit;
- ``sandbox=none`` (explicit, or ``auto`` falling back) with a third-party
  suite is refused unless ``trust_local=true``.
"""

from __future__ import annotations

import atexit
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from lab.errors import ConfigError
from lab.sandbox.base import SandboxBackend
from lab.sandbox.reaper import RunRoot, reap_stale
from lab.sandbox.registry import resolve_backend


@dataclass(frozen=True)
class Sandbox:
    """The backend in force and the directory task copies are made in.

    Attributes:
        backend: wraps every command of every run.
        requested: the ``sandbox=`` value (``auto``, ``bwrap``, ``none`` …).
        run_root: this lab process's temp root for task copies.
    """

    backend: SandboxBackend
    requested: str
    run_root: Path

    @property
    def name(self) -> str:
        """The backend in force (``bwrap``, ``none`` …): a measured condition."""
        return self.backend.name


_lock = threading.Lock()
_resolved: dict[str, SandboxBackend] = {}
_root: list[RunRoot] = []


def _run_root(stderr: TextIO) -> Path:
    if not _root:
        line = reap_stale().line
        if line:
            print(line, file=stderr)
        root = RunRoot.create()
        atexit.register(root.close)
        _root.append(root)
    return _root[0].path


def open_sandbox(requested: str, *, stderr: TextIO | None = None) -> Sandbox:
    """The process's sandbox for ``sandbox=<requested>`` (resolved once per name).

    Raises:
        SandboxError: an unknown backend, or ``bwrap`` asked for and unusable.
    """
    stream = stderr or sys.stderr
    with _lock:
        backend = _resolved.get(requested)
        if backend is None:
            resolved = resolve_backend(requested)
            if resolved.warning:
                print(resolved.warning, file=stream)
            backend = _resolved[requested] = resolved.backend
        return Sandbox(backend=backend, requested=requested, run_root=_run_root(stream))


def check_trust(sandbox: Sandbox, *, third_party: bool, trust_local: bool, where: str,
                what: str = "a third-party suite") -> None:
    """Refuse unsandboxed commands of a third-party suite (or a command agent) without ``trust_local=true``.

    Raises:
        ConfigError: one line naming the suite, the backend and both fixes.
    """
    if sandbox.name != "none" or not third_party or trust_local:
        return
    how = ("sandbox=none" if sandbox.requested == "none"
           else f"sandbox={sandbox.requested} fell back to none")
    raise ConfigError(f"{where} is {what} and {how}: its commands would run "
                      f"unsandboxed on the host; pass trust_local=true to allow it, or use "
                      f"sandbox=bwrap (apt-get install bubblewrap)")
