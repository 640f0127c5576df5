"""Install command agents into their own prefix under the data dir, never into the lab's environment.

``pypi`` agents: a venv made with the system interpreter (``/usr/bin/python3``,
so a sandbox that shows ``/usr`` can run it) at
``<data dir>/agents/<name>/venv``, then ``pip install PACKAGE==VERSION``.
``npm`` agents: ``npm install --prefix <data dir>/agents/<name>/npm
PACKAGE@VERSION``. ``lab`` agents (the reference agent) need nothing.

The file ``installed-version`` is written last, so an interrupted install
counts as not installed and the next ``install`` starts over. An install of
the pinned version that is already there is reused (nothing runs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.agents.command import CommandPreset, agent_prefix, installed_version
from lab.errors import ConfigError
from lab.files import write_atomic

SYSTEM_PYTHON = "/usr/bin/python3"
STAMP = "installed-version"

Runner = Callable[[list[str]], int]


def _run(argv: list[str]) -> int:
    """Run a step with its output on the terminal (pip and npm show their own progress)."""
    return subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode


@dataclass(frozen=True)
class AgentState:
    """One preset's installation (a row of ``lab agents list``).

    Attributes:
        name, manager: the preset.
        pinned: the version the preset pins (``agent.version``).
        installed: the installed version, None when not installed
            (``lab`` agents: the pinned one, always there).
        size_bytes: bytes under the agent's prefix (0 for ``lab`` agents).
        prefix: the agent's prefix, None for ``lab`` agents.
    """

    name: str
    manager: str
    pinned: str
    installed: str | None
    size_bytes: int
    prefix: Path | None


def install_agent(preset: CommandPreset, data_dir: Path, *, run: Runner = _run,
                  say: Callable[[str], None] = print) -> AgentState:
    """Install ``preset`` at its pinned version under ``data_dir`` (reused when already there).

    Raises:
        ConfigError: the installer (venv/pip or npm) is missing or a step failed;
            one line naming the step and the fix.
    """
    prefix = agent_prefix(data_dir, preset.name)
    if preset.manager == "lab":
        say(f"agent {preset.name}: ships with the lab; nothing to install")
        return agent_state(preset, data_dir)
    if installed_version(preset, data_dir) == preset.package_version:
        say(f"agent {preset.name}: {preset.package} {preset.package_version} already installed at {prefix}")
        return agent_state(preset, data_dir)
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    os.chmod(prefix, 0o755)  # a sandbox's unprivileged user must be able to run it
    for step in _steps(preset, prefix):
        say(f"agent {preset.name}: {' '.join(step)}")
        code = run(step)
        if code != 0:
            raise ConfigError(f"agent {preset.name}: `{' '.join(step)}` failed with exit {code}")
    write_atomic(prefix / STAMP, f"{preset.package_version}\n".encode())
    say(f"agent {preset.name}: installed {preset.package} {preset.package_version} at {prefix}")
    return agent_state(preset, data_dir)


def _steps(preset: CommandPreset, prefix: Path) -> list[list[str]]:
    spec = f"{preset.package}=={preset.package_version}"
    if preset.manager == "pypi":
        python = SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else shutil.which("python3")
        if python is None:
            raise ConfigError(f"agent {preset.name}: no python3 to make its venv (apt-get install python3-venv)")
        venv = prefix / "venv"
        return [[python, "-m", "venv", str(venv)],
                [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                 "--no-input", spec]]
    npm = shutil.which("npm")
    if npm is None:
        raise ConfigError(f"agent {preset.name}: npm is not on PATH (apt-get install npm)")
    return [[npm, "install", "--prefix", str(prefix / "npm"), "--no-audit", "--no-fund", "--no-save",
             f"{preset.package}@{preset.package_version}"]]


def agent_state(preset: CommandPreset, data_dir: Path) -> AgentState:
    """What is installed for ``preset`` (see :class:`AgentState`)."""
    if preset.manager == "lab":
        return AgentState(preset.name, preset.manager, preset.version, preset.version, 0, None)
    prefix = agent_prefix(data_dir, preset.name)
    return AgentState(preset.name, preset.manager, preset.package_version or preset.version,
                      installed_version(preset, data_dir), _size(prefix), prefix)


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total
