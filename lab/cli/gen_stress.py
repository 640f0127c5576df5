"""`lab gen-stress instances=N [out=DIR] [force=true]`: write chain-walk-rules instances.

Writes instances 1..N (see :mod:`lab.stress`) as one suite directory, by default
``./long-context-stress-generated``. Instances 1-5 are byte-identical to the ones
bundled in ``suites/long-context-stress``. An existing non-empty directory is
replaced only with ``force=true`` and only if gen-stress wrote it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lab.errors import ConfigError, LabError

DEFAULT_OUT = "long-context-stress-generated"
_USAGE = "expected instances=N [out=DIR] [force=true]"


def _parse(overrides: list[str]) -> tuple[int, Path, bool]:
    """(instances, out dir, force) from ``key=value`` arguments; ConfigError names the bad one."""
    given: dict[str, str] = {}
    for arg in overrides:
        key, sep, value = arg.partition("=")
        if not sep or key not in {"instances", "out", "force"}:
            raise ConfigError(f"unknown argument {arg!r}; {_USAGE}")
        if key in given:
            raise ConfigError(f"{key} given twice; {_USAGE}")
        given[key] = value
    if "instances" not in given:
        raise ConfigError(f"missing instances=N; {_USAGE}")
    raw = given["instances"]
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"instances must be a positive integer, got {raw!r}")
    force = given.get("force", "false").lower()
    if force not in {"true", "false"}:
        raise ConfigError(f"force must be true or false, got {given['force']!r}")
    out = given.get("out", DEFAULT_OUT)
    if not out:
        raise ConfigError("out must not be empty")
    return int(raw), Path(out).expanduser(), force == "true"


def gen_stress(overrides: list[str]) -> int:
    """Entry point of ``lab gen-stress``; returns 0, or 1 with one line on stderr."""
    from lab.stress import write_suite

    try:
        count, out, force = _parse(overrides)
        written = write_suite(out, count, force=force)
    except (LabError, OSError) as exc:
        print(f"lab gen-stress: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {count} chain-walk-rules instance(s) to {written}; run them with "
          f"`lab run suite.id=long-context-stress-generated suite.path={written} yes=true`")
    return 0
