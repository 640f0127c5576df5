"""The ``none`` backend: commands run on the host, in the task copy itself.

Isolates nothing and applies no resource limits; it exists for hosts without
bubblewrap and for users who trust the code they evaluate (the run
configuration must say ``trust_local=true`` for third-party suites and
command agents). Commands see the host path of the task copy, the host's
``PATH`` and ``/tmp``, and none of the lab's other environment variables.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from lab.sandbox.base import Bind, Launch, Limits, base_env, check_request


class NoneBackend:
    """Runs argv unchanged on the host with cwd = the task copy.

    Args:
        host_env: the lab's environment, of which only ``PATH`` is used;
            ``os.environ`` when None (injected by tests).
    """

    def __init__(self, host_env: Mapping[str, str] | None = None) -> None:
        source = os.environ if host_env is None else host_env
        self._path = source.get("PATH") or os.defpath

    @property
    def name(self) -> str:
        """``"none"``."""
        return "none"

    def inside_path(self, workspace: Path) -> PurePosixPath:
        """The host path itself: commands see where the copy really is."""
        return PurePosixPath(Path(workspace).resolve())

    def prepare(self, path: Path) -> None:
        """Nothing to do: commands run as the lab's own user."""

    def wrap(self, argv: Sequence[str], *, workspace: Path, env: Mapping[str, str],
             network: bool = False, limits: Limits = Limits(),
             binds: Sequence[Bind] = ()) -> Launch:
        """``argv`` unchanged; ``network``, ``limits`` and ``binds`` are ignored.

        The environment is ``base_env`` (host ``PATH``, ``HOME`` = the task
        copy, host temp dir) plus ``env``. A bind's command must be given
        its ``source`` path: nothing is mounted.

        Raises:
            SandboxError: empty argv, a missing workspace or a bad env name.
        """
        check_request(argv, workspace, env)
        workspace = Path(workspace).resolve()
        full_env = base_env(path=self._path, home=str(workspace), tmpdir=tempfile.gettempdir())
        full_env.update(env)
        return Launch(argv=list(argv), env=full_env, cwd=workspace)
