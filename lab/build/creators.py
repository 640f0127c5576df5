"""The shape of every doit task creator of the lab, and usage errors as tasks.

A creator yields nothing unless its task was asked for; it plans (composes
and checks everything) before any task exists, and a :class:`lab.errors.LabError`
from planning becomes a task that prints one line and makes doit exit 1
(doit itself would exit 3 with a traceback of its own wording).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from lab.build.cmdline import progress_requested, requested
from lab.errors import LabError

T = TypeVar("T")


def usage_error_tasks(basename: str, message: str, *, progress: bool = False) -> Iterator[dict[str, Any]]:
    """Tasks that print ``message`` to stderr and make doit exit 1, before any run.

    With ``progress`` the message is followed by a ``run_error`` event on stderr.

    (doit turns an exception in a task creator into exit 3 with its own
    wording; SPEC wants exit 1 and the lab's one-line message.)
    """
    hidden = f"_{basename}_usage_error"
    yield {"basename": hidden, "actions": [(_usage_error, [message, progress])], "verbosity": 2}
    yield {"name": "usage-error", "actions": None, "task_dep": [hidden]}


def _usage_error(message: str, progress: bool = False) -> Any:
    from doit.exceptions import TaskFailed

    from lab.execute.events import emit_run_error

    print(message, file=sys.stderr, flush=True)
    emit_run_error(None, message, 1, progress=progress)
    return TaskFailed(message, report=False)


def creator(basename: str, plan: Callable[[], T], build: Callable[[T], Iterator[dict[str, Any]]],
            *, prefix: str = "") -> Iterator[dict[str, Any]]:
    """The shape of every task creator: nothing unless ``basename`` was asked for;
    ``plan()`` composes and checks everything up front, and a LabError it raises
    becomes a one-line usage error (exit 1) before anything runs.

    Every task writes straight to the process's stdout and stderr (doit's
    ``io: {"capture": False}``). doit's capture swaps ``sys.stdout`` and
    ``sys.stderr`` for the whole process while an action runs; with ``jobs=N``
    the threads' swaps interleave, later actions write through other actions'
    stale capture buffers from several threads at once, and CPython can crash
    there (a segmentation fault, or an object read as another: "'str' object has
    no attribute 'write'"). The lab's tasks all have verbosity 2, so doit never
    shows what it would have captured."""
    if not requested(basename):
        return
    try:
        planned = plan()
    except LabError as exc:
        tasks = usage_error_tasks(basename, f"{prefix}{exc}", progress=progress_requested())
    else:
        tasks = build(planned)
    for task in tasks:
        yield {**task, "io": {"capture": False}}
