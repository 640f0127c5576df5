"""Run the real `doit` and `lab` commands as processes against the checkout.

:func:`run_script` forks each command from :mod:`tests.helpers.forkserver` (a
real process, without a second of imports each time); ``pytest --fresh-processes``
starts each one as a fresh interpreter instead, as a user's shell does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import forkserver

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FRESH = {"processes": False}
"""Set by ``--fresh-processes`` (tests/conftest.py): every command a fresh interpreter."""
SHARED_CACHE: dict[str, str] = {}
"""``dir``: the ``LAB_CACHE_DIR`` of every command :func:`lab_env` describes, one directory per test session
(set by tests/conftest.py). The commands of all tests share it, as a user's commands share their cache dir;
the user's own ``~/.cache/reliability-lab`` is never written."""


def command_env() -> dict[str, str]:
    """The environment of a command a test starts: this process's without ``LAB_*`` variables, with
    the session's cache dir (:data:`SHARED_CACHE`) as ``LAB_CACHE_DIR``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    if SHARED_CACHE:
        env["LAB_CACHE_DIR"] = SHARED_CACHE["dir"]
    return env


def lab_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """:func:`command_env` with the run store ``data_dir`` and ``extra``."""
    env = command_env()
    env.update(extra, LAB_DATA_DIR=str(data_dir))
    return env


def run_script(argv: list[str], *, env: dict[str, str], cwd: Path | str = ROOT, timeout_s: float = 300,
               input: str | None = None, stdin: int | None = None,
               mounts: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the virtualenv's console script ``argv[0]`` (``lab``, ``doit``) like ``subprocess.run``, output captured.

    stdin is ``/dev/null`` unless ``input`` (text) or ``stdin`` (a file descriptor) is given; ``subprocess.TimeoutExpired``
    after ``timeout_s`` seconds, the command killed. ``mounts``: a shell script run first in a mount namespace of
    the command's own, as ``unshare -m sh -c 'MOUNTS && exec COMMAND'`` does (needs the right to mount).
    """
    if FRESH["processes"]:
        command = [str(BIN / argv[0]), *argv[1:]]
        if mounts:
            command = ["unshare", "-m", "sh", "-c", f'{mounts} && exec "$0" "$@"', *command]
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              input=input, stdin=subprocess.DEVNULL if input is None and stdin is None else stdin,
                              timeout=timeout_s, check=False)
    return forkserver.run(argv, env=env, cwd=cwd, timeout=timeout_s, input=input, stdin=stdin, mounts=mounts)


def start_script(argv: list[str], *, env: dict[str, str], cwd: Path | str = ROOT, session: bool = False) -> Any:
    """Start the virtualenv's console script ``argv[0]`` and return at once: a ``subprocess.Popen`` with
    ``stdout=PIPE, stderr=PIPE, text=True`` and stdin ``/dev/null``, or what behaves as one
    (:class:`tests.helpers.forkserver.Started`): ``pid``, ``stdout``, ``stderr``, ``send_signal``, ``kill``,
    ``wait``, ``communicate``, ``returncode``. ``session``: the command leads a session (and process group)
    of its own, as a shell's foreground job does: ``os.killpg(pid, SIGINT)`` is the terminal's Ctrl-C."""
    if FRESH["processes"]:
        return subprocess.Popen([str(BIN / argv[0]), *argv[1:]], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, start_new_session=session)
    return forkserver.start(argv, env=env, cwd=cwd, session=session)


def run_cmd(argv: list[str], data_dir: Path, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (``doit …`` or ``lab …``) from the checkout with its own run store."""
    return run_script(argv, env=lab_env(data_dir), timeout_s=timeout_s)
