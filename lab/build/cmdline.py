"""What doit was asked: its command line, the ``key=value`` overrides, its configuration.

``doit_config`` builds ``DOIT_CONFIG`` (the sqlite3 dependency DB in the data
dir, the lab's reporter, ``jobs=N`` threads); ``cmdline_overrides`` hands every
``key=value`` doit received to Hydra; ``requested`` and ``building`` tell a
task creator whether this command asked for it and whether it will execute
tasks (``doit clean``/``forget``/``list`` only read the graph).
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

from lab import paths

# Set by the ``lab`` CLI before it drives doit; None under the ``doit`` executable.
REQUESTED: set[str] | None = None


DOIT_COMMANDS = frozenset({"auto", "clean", "dumpdb", "forget", "help", "ignore", "info", "list",
                           "reset-dep", "run", "strace", "tabcompletion"})


DOIT_VALUE_OPTIONS = frozenset({"-f", "--file", "-d", "--dir", "--db-file", "--backend", "--check_file_uptodate",
                                "-n", "--process", "-P", "--parallel-type", "-r", "--reporter", "-o",
                                "--output-file", "-v", "--verbosity", "--seek-file"})
"""doit options followed by a separate value word."""


MAX_JOBS = 256
"""The most runs at once (``jobs``), as ``lab/schemas/config.schema.json`` says."""


def doit_config(variables: dict[str, str] | None = None) -> dict[str, Any]:
    """DOIT_CONFIG: sqlite3 dependency DB in the data dir, ``eval`` by default.

    ``jobs=N`` runs N runs at once in threads; ``json=true`` silences
    everything but the JSON lines. Both are read from doit's variables here
    because doit fixes its runner before any task exists; Hydra validates
    them again when the tasks are created.
    """
    from lab.execute.progress import LabReporter, reset_display

    if variables is None and process_pool_requested(sys.argv[1:]):
        print("doit: -P process is not supported (the runs share locks a process pool cannot pickle); "
              "use -n N alone or jobs=N, which run N runs at once in threads", file=sys.stderr)
        raise SystemExit(1)
    data = paths.data_dir()
    under_doit = variables is None
    _check_data_dir(data, exit_on_error=under_doit)
    variables = _cmdline_variables() if variables is None else variables
    quiet = variables.get("json", "false").lower() in {"true", "1", "yes"}
    reset_display(quiet=quiet)
    # par_type "thread" also for doit's own ``-n N``: the tasks share locks and events,
    # which doit's default process pool cannot pickle (it would hang).
    config: dict[str, Any] = {"dep_file": str(data / ".doit.sqlite"), "backend": _backend(under_doit),
                              "default_tasks": ["eval"], "verbosity": 2, "reporter": LabReporter,
                              "par_type": "thread"}
    jobs = variables.get("jobs", "1")
    # Above the config schema's maximum the config check refuses it in one line when the tasks are
    # created; doit must not have started its threads by then (jobs=100000 failed in thread start).
    if jobs.isdigit() and 1 < int(jobs) <= MAX_JOBS:
        config.update(num_process=int(jobs))
    return config


def _check_data_dir(data: Path, *, exit_on_error: bool) -> None:
    """The data dir must hold the run store: one line and exit 1 under doit, DataDirError under lab."""
    from lab.build.depdb import DataDirError, check_data_dir

    try:
        check_data_dir(data)
    except DataDirError as exc:
        if not exit_on_error:
            raise
        print(f"doit: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


def _backend(under_doit: bool) -> str:
    """doit's DB backend: the lab's (rebuilt when corrupted, see lab.build.depdb), always.

    Under ``lab`` the plugin table is passed to doit. Under ``doit`` the table is
    read from the ``pyproject.toml`` of the directory doit *started* in, while
    ``DOIT_CONFIG`` is read after doit changed to the dodo file's directory
    (``-f PATH/dodo.py``, ``-d DIR``, ``--seek-file``): the two need not agree.
    doit has no API to add a backend from ``dodo.py``, so the backend is added
    to the map of the command that is loading this file (found on the call
    stack: ``DoitCmdBase.execute`` holds it as ``self._backends``); when no such
    command is found, doit's own ``sqlite3``.
    """
    from lab.build.depdb import BACKEND_NAME, LabSqliteDB

    if not under_doit:
        return BACKEND_NAME
    frame = sys._getframe(1)
    while frame is not None:
        backends = getattr(frame.f_locals.get("self"), "_backends", None)
        if isinstance(backends, dict):
            backends.setdefault(BACKEND_NAME, LabSqliteDB)
            return BACKEND_NAME
        frame = frame.f_back  # type: ignore[assignment]
    return "sqlite3"


def process_pool_requested(argv: list[str]) -> bool:
    """Whether doit's command line asks for its process pool (``-P process``, ``--parallel-type=process``)."""
    for i, arg in enumerate(argv):
        if arg in {"-P", "--parallel-type"} and argv[i + 1:i + 2] == ["process"]:
            return True
        if arg in {"-Pprocess", "--parallel-type=process"}:
            return True
    return False


def _cmdline_variables() -> dict[str, str]:
    from doit import doit_cmd

    return dict(doit_cmd._CMDLINE_VARS or {})  # doit keeps no public accessor for all of them


def cmdline_overrides() -> list[str]:
    """Every ``key=value`` doit received, in command-line order, as Hydra overrides."""
    return [f"{key}={value}" for key, value in _cmdline_variables().items()]


def argv_words() -> list[str]:
    """doit's positional words (command, task names), without options and their values."""
    return list(_words(tuple(sys.argv[1:])))


@cache
def _words(args: tuple[str, ...]) -> tuple[str, ...]:
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in DOIT_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-") and "=" not in arg:
            words.append(arg)
    return tuple(words)


def building() -> bool:
    """Whether this command executes tasks (not ``doit clean``/``forget``/``list``/…, which only read the graph)."""
    if REQUESTED is not None:
        return True
    words = argv_words()
    return not words or words[0] not in DOIT_COMMANDS - {"run"}


def requested(basename: str) -> bool:
    """Whether this command asked for ``basename`` (creators stay cheap otherwise)."""
    if REQUESTED is not None:
        return basename in REQUESTED
    words = argv_words()
    names = {w.split(":", 1)[0] for w in words if w not in DOIT_COMMANDS}
    if not words:
        return basename == "eval"  # doit's default task
    return basename in names


def progress_requested() -> bool:
    """Whether the command line asked for ``progress=true`` (read before any config is composed)."""
    from lab.config.options import BOOLEANS

    value = _cmdline_variables().get("progress", "false")
    return BOOLEANS.get(str(value).lower(), False)
