"""`lab agents install NAME` and `lab agents list`: command agents and their installations.

``install`` puts a preset's pinned version into its own prefix under the data
dir (a venv for PyPI agents, an npm prefix for npm agents; see
:mod:`lab.agents.install`), reused when already there. ``list`` shows every
command-agent preset of ``conf/agent/``: how it installs, the pinned and the
installed version, and the size on disk.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.agents.command import CommandPreset

USAGE = "usage: lab agents install NAME | lab agents list"


def agents(argv: list[str]) -> int:
    """Dispatch ``install`` / ``list``; returns 0, or 1 on a usage or install error."""
    from lab.errors import LabError

    try:
        if argv[:1] == ["install"] and len(argv) == 2:
            return _install(argv[1])
        if argv == ["list"]:
            return _list()
    except LabError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(USAGE, file=sys.stderr)
    return 1


def _presets() -> list[str]:
    from lab.paths import CONF_DIR

    return sorted(p.stem for p in (CONF_DIR / "agent").glob("*.yaml"))


def _preset(name: str) -> CommandPreset:
    from lab.agents.command import CommandPreset
    from lab.config.compose import compose_config
    from lab.errors import ConfigError

    known = _presets()
    if name not in known:
        raise ConfigError(f"lab agents: no preset {name!r} in conf/agent/ (known: {', '.join(known)})")
    agent = compose_config([f"agent={name}"]).data["agent"]
    if agent.get("kind") != "command":
        raise ConfigError(f"lab agents: {name} is the lab's built-in agent; nothing to install")
    return CommandPreset.from_config(agent)


def _install(name: str) -> int:
    from lab.agents.install import install_agent
    from lab.paths import data_dir

    install_agent(_preset(name), data_dir(), say=lambda line: print(line, file=sys.stderr))
    return 0


def _list() -> int:
    from tabulate import tabulate

    from lab.agents.install import agent_state
    from lab.paths import data_dir

    rows = []
    for name in _presets():
        if name == "builtin":
            continue
        state = agent_state(_preset(name), data_dir())
        rows.append((state.name, state.manager, state.pinned, state.installed or "not installed",
                     f"{state.size_bytes / 1e6:.1f} MB" if state.prefix and state.installed else "-", state.prefix or "(lab)"))
    print(tabulate(rows, headers=["agent", "install", "pinned", "installed", "size", "prefix"], tablefmt="simple"))
    return 0
