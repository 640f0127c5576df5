"""`lab run`, `lab record`, `lab ci`: drive the same doit graph as `doit eval` / `record` / `ci`."""

from __future__ import annotations

import sys


def run(overrides: list[str]) -> int:
    """``lab run OVERRIDES…`` = ``doit eval OVERRIDES…``; returns the SPEC exit code.

    ``lab run -m OVERRIDES…`` is a Hydra multirun over the sweep (see lab.build.multirun).
    """
    if "-m" in overrides or "--multirun" in overrides:
        from lab.build.multirun import run_multirun

        return run_multirun([o for o in overrides if o not in ("-m", "--multirun")])
    return _doit("eval", overrides, command="run")


def record(overrides: list[str]) -> int:
    """``lab record OVERRIDES…`` = ``doit record OVERRIDES…``."""
    return _doit("record", overrides)


def _doit(basename: str, overrides: list[str], *, command: str | None = None) -> int:
    """Run doit task ``basename`` with ``overrides``; print usage errors as one line."""
    from lab.build.commands import run_graph

    bad = [o for o in overrides if "=" not in o or o.startswith("-")]
    if bad:
        print(f"lab {command or basename}: expected key=value overrides, got {' '.join(bad)!r} "
              f"(see `lab {command or basename} --help`)", file=sys.stderr)
        return 1
    from lab.cli.options import guarded

    return guarded("run" if basename == "eval" else basename, lambda: run_graph(basename, overrides))


def ci(overrides: list[str]) -> int:
    """``lab ci [out=DIR] [suite_dir=DIR] [suite=ID] [cassette_dir=DIR]`` = ``doit ci`` (SPEC R7, lab.build.ci)."""
    return _doit("ci", overrides)


def variants(overrides: list[str]) -> int:
    """``lab variants suite=… variant=a,b [k=…]`` = ``doit variants …`` (SPEC VA2)."""
    return _doit("variants", overrides)
