"""The sandbox of one lab process: resolved once, checked against the suite.

``choose_sandbox`` is called where a command's ``EvalContext`` is built
(``lab.build.graph.prepare``): it names the backend the runs will use (a
run's inputs include it), without starting a sandbox when this host is
known to run bwrap (:mod:`lab.execute.probe_memo`). ``open_chosen`` opens
the sandbox before the first run the command executes (a command that finds
every run up to date opens none) and checks that it is that backend:

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

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from lab.cleanup import at_exit
from lab.console import print_line
from lab.errors import ConfigError, SandboxError

if TYPE_CHECKING:
    from lab.sandbox.base import SandboxBackend
    from lab.sandbox.reaper import RunRoot


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


@dataclass(frozen=True)
class SandboxChoice:
    """The backend ``sandbox=<requested>`` gives, known before a sandbox is opened.

    Attributes:
        requested: the ``sandbox=`` value.
        name: the backend the runs will use (``bwrap``, ``none`` …).
        remembered: True when ``name`` comes from an earlier probe on this
            host (:mod:`lab.execute.probe_memo`), not from this process.
    """

    requested: str
    name: str
    remembered: bool = False


def choose_sandbox(requested: str, *, stderr: TextIO | None = None) -> SandboxChoice:
    """The backend ``sandbox=<requested>`` gives, found out without opening a sandbox.

    ``auto`` and ``bwrap`` on a host where a bwrap probe succeeded before (and
    nothing it depends on changed) give ``bwrap`` without a probe; otherwise
    the backend is resolved as :func:`open_sandbox` resolves it (once per
    process, a probe for ``auto``/``bwrap``, the fallback warning printed),
    and a bwrap that works is remembered. No temp root is made and no stale
    task copy reaped: that waits for :func:`open_chosen`.

    Raises:
        SandboxError: as :func:`open_sandbox`.
    """
    from lab.execute.probe_memo import bwrap_remembered, remember_bwrap

    probing = requested in ("auto", "bwrap")
    if probing and requested not in _resolved and bwrap_remembered():
        return SandboxChoice(requested, "bwrap", remembered=True)
    fresh = requested not in _resolved
    name = _backend(requested, stderr or sys.stderr).name
    if probing and fresh and name == "bwrap":
        remember_bwrap()
    return SandboxChoice(requested, name)


def cluster_choice(requested: str) -> SandboxChoice:
    """The backend of runs that execute on cluster workers (``executor=ray``), chosen without a probe here.

    Each worker sandboxes its runs with its own bwrap: ``auto`` and ``bwrap``
    give ``bwrap`` (a worker without a working bwrap fails the run with the
    same one-line error as ``sandbox=bwrap`` locally); ``none`` gives ``none``.
    """
    return SandboxChoice(requested, "bwrap" if requested in ("auto", "bwrap") else requested)


def open_chosen(choice: SandboxChoice, *, stderr: TextIO | None = None) -> Sandbox:
    """:func:`open_sandbox` for ``choice``, checking that it gives the backend the runs were planned with.

    Raises:
        SandboxError: the backend cannot be used, or it is not ``choice.name``
            (one line naming both); a remembered probe is then forgotten, so
            the next command probes again.
    """
    from lab.execute.probe_memo import forget_bwrap

    try:
        opened = open_sandbox(choice.requested, stderr=stderr)
    except SandboxError:
        if choice.remembered:
            forget_bwrap()
        raise
    if opened.name != choice.name:
        forget_bwrap()
        raise SandboxError(f"sandbox={choice.requested}: this command planned its runs under {choice.name} "
                           f"(a probe on this host found it working earlier), but it now resolves to "
                           f"{opened.name}; nothing was run: run the command again")
    return opened


def confirm_choice(choice: SandboxChoice, *, stderr: TextIO | None = None) -> tuple[Sandbox, SandboxChoice]:
    """Open the sandbox for ``choice`` now, before any run is planned to execute under it.

    Called when a command will execute runs under a remembered choice: a real
    probe confirms it, or gives the backend that holds now (the memo is then
    forgotten), so the runs are planned under the backend they will run under
    instead of the command stopping.

    Returns:
        The opened sandbox and the choice that holds (``choice`` when confirmed).

    Raises:
        SandboxError: as :func:`open_sandbox` (``sandbox=bwrap`` and bwrap fails
            now); the memo is forgotten.
    """
    from lab.execute.probe_memo import forget_bwrap

    try:
        opened = open_sandbox(choice.requested, stderr=stderr)
    except SandboxError:
        forget_bwrap()
        raise
    if opened.name == choice.name:
        return opened, choice
    forget_bwrap()
    return opened, SandboxChoice(choice.requested, opened.name)


_lock = threading.Lock()
_resolved: dict[str, SandboxBackend] = {}
_root: list[RunRoot] = []


def _run_root(stderr: TextIO) -> Path:
    from lab.sandbox.reaper import RunRoot, reap_stale

    if not _root:
        line = reap_stale().line
        if line:
            print_line(line, stderr)  # other runs may be printing (jobs=N)
        root = RunRoot.create()
        at_exit(root.close)  # a second Ctrl-C at exit does not leave the task copies behind
        _root.append(root)
    return _root[0].path


def process_run_root(stderr: TextIO | None = None) -> Path:
    """This process's temp root (``<tmp>/lab-runs-<uid>/<pid>-<random>/``), made on first use.

    Removed at exit; when the process is killed (a Ray worker at the cluster's
    shutdown) the next lab command on the machine reaps it
    (:func:`lab.sandbox.reaper.reap_stale`), so whatever a process keeps in it
    never piles up.
    """
    with _lock:
        return _run_root(stderr or sys.stderr)


def open_sandbox(requested: str, *, stderr: TextIO | None = None) -> Sandbox:
    """The process's sandbox for ``sandbox=<requested>`` (resolved once per name).

    Raises:
        SandboxError: an unknown backend, or ``bwrap`` asked for and unusable.
    """
    stream = stderr or sys.stderr
    backend = _backend(requested, stream)
    with _lock:
        return Sandbox(backend=backend, requested=requested, run_root=_run_root(stream))


def _backend(requested: str, stream: TextIO) -> SandboxBackend:
    """The backend for ``sandbox=<requested>``, resolved once per process (the warning printed then)."""
    from lab.sandbox.registry import resolve_backend

    with _lock:
        backend = _resolved.get(requested)
        if backend is None:
            resolved = resolve_backend(requested)
            if resolved.warning:
                print_line(resolved.warning, stream)
            backend = _resolved[requested] = resolved.backend
        return backend


def check_trust(sandbox: Sandbox | SandboxChoice, *, third_party: bool, trust_local: bool, where: str,
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
