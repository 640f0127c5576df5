"""User config directories: presets kept outside the installation (``LAB_CONFIG_PATH``).

``LAB_CONFIG_PATH=DIR[:DIR…]`` names directories laid out like the bundled
``conf/``: ``DIR/agent/my-agent.yaml``, ``DIR/provider/local.yaml``,
``DIR/suite/mine.yaml``, ``DIR/variant/…``, ``DIR/mode/…``, ``DIR/sandbox/…``.
Hydra searches them after the bundled ``conf/`` (they are put first in
``hydra.searchpath``), so ``agent=my-agent`` works from an installed lab as
from a checkout. A user preset may not reuse a bundled preset's name: Hydra
would pick the bundled one, so that is refused with one line naming both
files. ``hydra.searchpath=[…]`` given on the command line is Hydra's own and
is kept after these directories. User docs: ``docs/configuration.md``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from lab.errors import ConfigError
from lab.files import file_kind
from lab.paths import CONF_DIR

ENV = "LAB_CONFIG_PATH"
GROUPS = ("suite", "provider", "mode", "agent", "variant", "sandbox", "executor")
"""The config groups, in the order ``--help`` lists them."""


def user_config_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """The directories ``LAB_CONFIG_PATH`` names, absolute, in its order (empty entries skipped).

    Raises:
        ConfigError: an entry is not a directory (one line naming it and the variable).
    """
    value = (os.environ if env is None else env).get(ENV, "")
    dirs: list[Path] = []
    for entry in value.split(os.pathsep):
        if not entry.strip():
            continue
        path = Path(entry).expanduser().absolute()
        if not path.is_dir():
            raise ConfigError(f"{ENV}: {path} is not a directory (expected DIR[{os.pathsep}DIR…], each laid out "
                              "like conf/: agent/, provider/, suite/ …)")
        if path not in dirs:
            dirs.append(path)
    return dirs


def searchpath_overrides(dirs: Sequence[Path], overrides: Sequence[str]) -> list[str]:
    """``overrides`` with ``hydra.searchpath`` holding ``dirs`` first (a user's own
    ``hydra.searchpath=[…]`` entries kept after them); unchanged when ``dirs`` is empty."""
    if not dirs:
        return list(overrides)
    given: list[str] = []
    rest: list[str] = []
    for text in overrides:
        if text.split("=", 1)[0].lstrip("+~") == "hydra.searchpath" and "=" in text:
            given = _list_items(text.split("=", 1)[1])
        else:
            rest.append(text)
    items = [_quoted(f"file://{d}") for d in dirs] + given
    return [f"hydra.searchpath=[{','.join(items)}]", *rest]


def _list_items(value: str) -> list[str]:
    """The items of a Hydra list value ``[a,'b c']`` as Hydra override text (quoted when needed)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        items = OverridesParser.create().parse_override(f"hydra.searchpath={value}").value()
    except Exception:  # Hydra's parser error types: an unreadable list is reported below
        items = None
    if not isinstance(items, list):
        raise ConfigError(f"config: hydra.searchpath: expected a list, e.g. hydra.searchpath=[file:///dir], "
                          f"got {value!r}")
    return [_quoted(str(item)) for item in items]


def _quoted(text: str) -> str:
    r"""``text`` single-quoted for Hydra's parser (``'`` and the ``\`` before it escaped)."""
    import re

    return "'" + re.sub(r"(\\*)('|\Z)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""), text) + "'"


def user_options(dirs: Sequence[Path]) -> dict[str, list[tuple[str, Path]]]:
    """Group → [(option, its file)] found in ``dirs`` (the first directory holding a name wins)."""
    found: dict[str, list[tuple[str, Path]]] = {g: [] for g in GROUPS}
    for group in GROUPS:
        seen: set[str] = set()
        for directory in dirs:
            for path in sorted((directory / group).glob("*.yaml")):
                if path.stem not in seen:
                    seen.add(path.stem)
                    found[group].append((path.stem, path))
    return found


def special_file_problems(dirs: Sequence[Path]) -> list[str]:
    """One line per ``*.yaml`` of ``dirs`` (top level and group directories) that is not a regular file.

    Hydra opens every preset it lists; a FIFO named ``agent/x.yaml`` would
    block that open forever, a device would be read without end. Such a
    file is named before Hydra runs (``os.stat``: a link to a regular file is fine).
    """
    problems = []
    for directory in dirs:
        listed = [*sorted(directory.glob("*.yaml")), *(p for g in GROUPS for p in sorted((directory / g).glob("*.yaml")))]
        for path in listed:
            try:
                mode = path.stat().st_mode
            except OSError:
                continue  # a dangling link: Hydra names it
            if not stat.S_ISREG(mode):
                problems.append(f"config: {path}: not a regular file (a {file_kind(mode)}); a config file must be one")
    return problems


def clash_problems(dirs: Sequence[Path], conf_dir: Path = CONF_DIR) -> list[str]:
    """One line per user preset that has a bundled preset's name (Hydra would use the bundled one)."""
    return [f"{ENV}: {path}: a bundled preset has this name ({conf_dir / group / path.name}), and Hydra would "
            f"use that one; rename yours (e.g. {group}=my-{name})"
            for group, options in user_options(dirs).items() for name, path in options
            if (conf_dir / group / path.name).is_file()]


def option_file(group: str, name: str, conf_dir: Path = CONF_DIR,
                env: Mapping[str, str] | None = None) -> Path | None:
    """The file of option ``name`` of ``group``: the bundled one, else the first user directory's; None if neither."""
    bundled = conf_dir / group / f"{name}.yaml"
    if bundled.is_file():
        return bundled
    try:
        dirs = user_config_dirs(env)
    except ConfigError:
        return None  # reported by the compose itself
    return next((d / group / f"{name}.yaml" for d in dirs if (d / group / f"{name}.yaml").is_file()), None)
