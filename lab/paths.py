"""Where the lab finds its checkout files and keeps its data.

The lab runs from a checkout (installed editable): ``conf/``, ``suites/`` and
``cassettes/`` sit beside the ``lab`` package. Results land in one place
whatever the working directory: the checkout's ``runs/``, or for an
installation that is not a checkout the per-user data directory
(``$XDG_DATA_HOME/reliability-lab``, default ``~/.local/share/reliability-lab``).
``LAB_DATA_DIR`` overrides both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "conf"
SUITES_DIR = ROOT / "suites"
CASSETTES_DIR = ROOT / "cassettes"
SCHEMAS_DIR = Path(__file__).resolve().parent / "schemas"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The run store, an absolute path, independent of the working directory.

    ``$LAB_DATA_DIR`` if set; else ``<checkout>/runs`` when the lab runs from a
    checkout (``pyproject.toml`` beside the package); else the per-user data
    directory ``$XDG_DATA_HOME/reliability-lab`` (``~/.local/share/…``).
    """
    env = os.environ if env is None else env
    if env.get("LAB_DATA_DIR"):
        return Path(env["LAB_DATA_DIR"]).expanduser().absolute()
    if (ROOT / "pyproject.toml").is_file():
        return ROOT / "runs"
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser().absolute() / "reliability-lab"


def from_root(path: str | Path) -> Path:
    """Resolve a configured path: absolute as given, relative against the checkout."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else ROOT / p
