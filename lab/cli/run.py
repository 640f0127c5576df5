"""`lab run`, `lab record`, `lab variants`: drive the same doit graph as `doit eval` / `record` / `variants`."""

from __future__ import annotations

import sys


def run(overrides: list[str]) -> int:
    """``lab run OVERRIDES…`` = ``doit eval OVERRIDES…``; returns the SPEC exit code.

    ``lab run -m OVERRIDES…`` is a Hydra multirun over the sweep (see lab.build.multirun).
    """
    if "-m" in overrides or "--multirun" in overrides:
        from lab.build.multirun import run_multirun

        return run_multirun([o for o in overrides if o not in ("-m", "--multirun")])
    return run_doit("eval", overrides, command="run")


def record(overrides: list[str]) -> int:
    """``lab record OVERRIDES…`` = ``doit record OVERRIDES…``."""
    return run_doit("record", overrides)


def run_doit(basename: str, overrides: list[str], *, command: str | None = None) -> int:
    """Run doit task ``basename`` with ``overrides``; print usage errors as one line."""
    from lab.build.commands import run_graph

    bad = [o for o in overrides if "=" not in o or o.startswith("-")]
    if bad:
        print(f"lab {command or basename}: expected key=value overrides, got {' '.join(bad)!r} "
              f"(see `lab {command or basename} --help`)", file=sys.stderr)
        return 1
    from lab.cli.options import guarded

    return guarded("run" if basename == "eval" else basename, lambda: run_graph(basename, overrides))


def variants(overrides: list[str]) -> int:
    """``lab variants suite=… variant=a,b [k=…]`` = ``doit variants …`` (SPEC VA2).

    With ``sequential=true`` (k = the maximum) one build per round of ``round=`` repetitions,
    until the sequential test decides (SPEC K9, lab.build.sequential).
    """
    from lab.build.sequential import sequential_requested
    from lab.cli.options import guarded
    from lab.errors import ConfigError

    try:
        sequential = sequential_requested(overrides)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    if not sequential or any("=" not in o or o.startswith("-") for o in overrides):
        return run_doit("variants", overrides)  # (a word that is not key=value: its one-line error)
    return guarded("variants", lambda: _sequential(overrides))


def _sequential(overrides: list[str]) -> int:
    """The rounds of a sequential variants command; the exit code of the last round built."""
    from lab.build.commands import run_graph
    from lab.build.sequential import ACTIVE, parse_sequential
    from lab.execute.progress import display

    run = parse_sequential(overrides)
    ACTIVE[:] = [run]
    code = 0
    try:
        for index in range(len(run.schedule)):
            code = run_graph("variants", run.round_overrides(index))
            run.executed += display().done
            if code != 0 or run.decided:
                break
    finally:
        ACTIVE.clear()
    return code
