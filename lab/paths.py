"""Where the lab finds its checkout files and keeps its data.

The lab runs from a checkout (installed editable): ``conf/``, ``suites/`` and
``cassettes/`` sit beside the ``lab`` package. ``LAB_DATA_DIR`` moves the run
store (default ``./runs`` under the current directory).
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
    """The run store: ``$LAB_DATA_DIR`` or ``./runs``, made absolute."""
    env = os.environ if env is None else env
    return Path(env.get("LAB_DATA_DIR") or "runs").absolute()


def from_root(path: str | Path) -> Path:
    """Resolve a configured path: absolute as given, relative against the checkout."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else ROOT / p
