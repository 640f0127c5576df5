"""`lab gen-stress instances=N [out=DIR] [force=true]`: write chain-walk-rules instances.

Writes instances 1..N (see :mod:`lab.suites.stress`) as one suite directory, by default
``./long-context-stress-generated``. Instances 1-5 are byte-identical to the ones
bundled in ``suites/long-context-stress``. An existing non-empty directory is
replaced only with ``force=true`` and only if gen-stress wrote it.
"""

from __future__ import annotations

from pathlib import Path

from lab.errors import ConfigError

DEFAULT_OUT = "long-context-stress-generated"
_USAGE = "expected instances=N [out=DIR] [force=true]"


def _parse(overrides: list[str]) -> tuple[int, Path, bool]:
    """(instances, out dir, force) from ``key=value`` arguments; ConfigError names the bad one."""
    from lab.config.options import flag, split_args

    stray, given = split_args(overrides, ("instances", "out", "force"))
    if stray:
        raise ConfigError(f"unexpected argument {stray[0]!r}; {_USAGE}")
    if "instances" not in given:
        raise ConfigError(f"missing instances=N; {_USAGE}")
    raw = given["instances"]
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"instances must be a positive integer, got {raw!r}")
    out = given.get("out", DEFAULT_OUT)
    if not out:
        raise ConfigError("out must not be empty")
    return int(raw), Path(out).expanduser(), flag(given, "force")


def gen_stress(overrides: list[str]) -> int:
    """Entry point of ``lab gen-stress``; returns 0, or 1 with one line on stderr."""
    from lab.cli.options import guarded

    return guarded("gen-stress", lambda: _gen_stress(overrides))


def _gen_stress(overrides: list[str]) -> int:
    from lab.suites.stress import write_suite

    count, out, force = _parse(overrides)
    written = write_suite(out, count, force=force)
    print(f"wrote {count} chain-walk-rules instance(s) to {written}; run them with "
          f"`lab run suite.id=long-context-stress-generated suite.path={written} yes=true`")
    return 0
