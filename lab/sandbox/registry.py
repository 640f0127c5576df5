"""Backends by short name, and the ``auto`` choice between them.

``sandbox=bwrap`` / ``sandbox=none`` name a backend; ``sandbox=auto`` (the
default) takes ``bwrap`` when the program is found *and* a probe sandbox
starts, otherwise ``none`` with one warning line naming the fix. A container
backend registers itself here under its own name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.sandbox.base import SandboxBackend, SandboxError, spawn_args
from lab.sandbox.bwrap import INSTALL_HINT, BwrapBackend
from lab.sandbox.none import NoneBackend
from lab.sandbox.walk import remove_tree

BackendFactory = Callable[[], SandboxBackend]
"""Builds a ready backend; raises ``SandboxError`` when it cannot run here."""

AUTO = "auto"

_PROBE_TIMEOUT_S = 20
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")

_REGISTRY: dict[str, BackendFactory] = {"bwrap": BwrapBackend, "none": NoneBackend}


def known_backends() -> list[str]:
    """Every name ``resolve_backend`` accepts, sorted (``auto`` included)."""
    return sorted([*_REGISTRY, AUTO])


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make a backend selectable as ``sandbox=<name>``.

    Args:
        name: lower-case short name (``[a-z][a-z0-9-]*``), not yet taken.
        factory: called with no arguments each time the backend is resolved.

    Raises:
        SandboxError: the name is malformed, ``auto``, or already registered.
    """
    if not _NAME.match(name) or name == AUTO or name in _REGISTRY:
        raise SandboxError(f"sandbox backend name {name!r}: expected a new lower-case name "
                           f"other than {', '.join(known_backends())}")
    _REGISTRY[name] = factory


def unregister_backend(name: str) -> None:
    """Remove a backend registered with ``register_backend`` (built-ins stay)."""
    if name not in ("bwrap", "none"):
        _REGISTRY.pop(name, None)


def probe(backend: SandboxBackend) -> str | None:
    """Start ``true`` inside ``backend`` once, in a throwaway task copy.

    Returns:
        None when it exited 0, else one line saying why not (bwrap's own
        message when it gave one).
    """
    workspace = Path(tempfile.mkdtemp(prefix="lab-sandbox-probe-"))
    try:
        backend.prepare(workspace)
        launch = backend.wrap(["true"], workspace=workspace, env={})
        with spawn_args(launch) as (argv, fds):
            result = subprocess.run(argv, env=launch.env, cwd=launch.cwd, pass_fds=fds,
                                    capture_output=True, timeout=_PROBE_TIMEOUT_S,
                                    start_new_session=True, check=False)
    except SandboxError as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run the probe: {exc}"
    finally:
        try:
            remove_tree(workspace)
        except OSError:
            pass  # a throwaway directory in the temp dir; nothing ran in it but `true`
    if result.returncode == 0:
        return None
    lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"the probe exited {result.returncode}"


@dataclass(frozen=True)
class Resolved:
    """The backend in force and how it was chosen.

    Attributes:
        backend: ready to ``wrap`` commands.
        requested: the name asked for (``auto``, ``bwrap``, ...).
        warning: one line for the console when ``auto`` fell back to
            ``none``; None otherwise.
    """

    backend: SandboxBackend
    requested: str
    warning: str | None = None


def _bwrap_or_reason() -> tuple[SandboxBackend | None, str]:
    try:
        backend = BwrapBackend()
    except SandboxError as exc:
        return None, str(exc)
    reason = probe(backend)
    if reason is not None:
        return None, f"sandbox bwrap: {backend.executable} cannot start a sandbox here: {reason}"
    return backend, ""


def resolve_backend(name: str = AUTO) -> Resolved:
    """The backend for a ``sandbox=`` value.

    ``bwrap`` and ``auto`` run a probe sandbox (about one command's start-up,
    see docs/sandbox.md); do it once per lab process, not per command.

    Args:
        name: ``auto``, ``bwrap``, ``none`` or a registered name.

    Returns:
        ``Resolved``; for ``auto`` without a working bwrap, the ``none``
        backend and a warning naming the fix (``apt-get install bubblewrap``).

    Raises:
        SandboxError: an unknown name (the message lists the known ones), or
            ``bwrap`` asked for explicitly and unusable (the message says why).
    """
    if name == AUTO:
        backend, reason = _bwrap_or_reason()
        if backend is not None:
            return Resolved(backend, name)
        if shutil.which("bwrap") is None:
            why, fix = "bwrap not found", f"install it: {INSTALL_HINT}"
        else:
            why, fix = reason.removeprefix("sandbox bwrap: "), "see docs/sandbox.md"
        return Resolved(NoneBackend(), name,
                        warning=f"sandbox: {why}; commands run UNSANDBOXED on the host "
                                f"(sandbox=none); {fix}")
    if name == "bwrap":
        backend, reason = _bwrap_or_reason()
        if backend is None:
            raise SandboxError(reason)
        return Resolved(backend, name)
    factory = _REGISTRY.get(name)
    if factory is None:
        raise SandboxError(f"unknown sandbox backend {name!r}; known: "
                           f"{', '.join(known_backends())}")
    return Resolved(factory(), name)
