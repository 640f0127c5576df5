"""The ``key=value`` options of the small commands (compare, admit, export, gate, gen-stress).

These commands take their own options, not Hydra overrides. Positionals and
options are split by :func:`split_args`; :func:`flag` and :func:`fraction`
read booleans and numbers, each raising a one-line ``ConfigError`` naming the
option.
"""

from __future__ import annotations

import re

from lab.errors import ConfigError

OPTION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def split_args(args: list[str], allowed: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """(positionals, options) from ``args``.

    An argument ``name=value`` whose name is an identifier is an option; any
    other argument (a path, a run id) is positional.

    Raises:
        ConfigError: an unknown option or one given twice, naming it and the known ones.
    """
    positionals: list[str] = []
    options: dict[str, str] = {}
    for arg in args:
        match = OPTION.match(arg)
        if match is None:
            positionals.append(arg)
            continue
        key, value = match.groups()
        if key not in allowed:
            raise ConfigError(f"unknown option {key!r} (options: {', '.join(f'{o}=…' for o in allowed)})")
        if key in options:
            raise ConfigError(f"option {key!r} given twice")
        options[key] = value
    return positionals, options


def flag(options: dict[str, str], key: str, default: bool = False) -> bool:
    """Option ``key`` as a boolean (true/false/yes/no/1/0).

    Raises:
        ConfigError: any other value.
    """
    if key not in options:
        return default
    value = options[key].strip().lower()
    if value not in BOOLEANS:
        raise ConfigError(f"{key}: expected true or false, got {options[key]!r}")
    return BOOLEANS[value]


def fraction(options: dict[str, str], key: str, default: float, *, below_one: bool = True) -> float:
    """Option ``key`` as a number >= 0 (and < 1 when ``below_one``).

    Raises:
        ConfigError: not a number, or out of range.
    """
    if key not in options:
        return default
    expected = "a number in [0, 1)" if below_one else "a number >= 0"
    try:
        value = float(options[key])
    except ValueError:
        raise ConfigError(f"{key}: expected {expected}, got {options[key]!r}") from None
    if not value >= 0 or (below_one and not value < 1) or value == float("inf"):
        raise ConfigError(f"{key}: expected {expected}, got {options[key]!r}")
    return value
