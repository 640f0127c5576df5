"""The Python API for programs: run an eval with callbacks and get a typed summary back.

::

    from lab import run_eval
    summary = run_eval(["suite=core", "mode=replay"], on_attempt=print)

:func:`run_eval` drives the same doit graph as ``lab run`` (same run store,
same records and reports, finished runs are not repeated). Summaries of
records that already exist: :func:`lab.report.summary.summarise_records`.
User docs: ``docs/api.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lab.errors import LabError
from lab.files import loads_json, read_text, split_lines
from lab.report.summary import Attempt, EvalSummary

OnAttempt = Callable[[Attempt], None]
OnEvent = Callable[[dict[str, Any]], None]


def run_eval(overrides: Sequence[str] = (), *, on_attempt: OnAttempt | None = None,
             on_event: OnEvent | None = None, quiet: bool = True) -> EvalSummary:
    """Run an eval (``lab run OVERRIDES…``) and return its summary.

    Args:
        overrides: Hydra overrides, e.g. ``["suite=core", "mode=replay", "k=3"]``.
        on_attempt: called with an :class:`Attempt` after each run that
            executed (not for runs whose record was already up to date; they
            are in the returned ``attempts``). Attempts count from 1.
        on_event: called with every lifecycle event (a dict as in
            ``events.jsonl``: ``schema``, ``event``, ``ts``, …); events about
            one run also carry ``attempt`` (= ``repetition`` + 1). A command
            that fails ends with a ``run_error`` event (``reason``, ``exitCode``).
        quiet: print nothing on stdout (the run lines and closing summary of
            ``lab run``); warnings still go to stderr.

    Callbacks run one at a time (also with ``jobs>1``), in the thread that
    finished the run. An exception raised by a callback stops further
    callbacks; the eval finishes and the exception is raised afterwards.

    Returns:
        The :class:`EvalSummary`, with ``exit_code`` (0 completed, 1 some run
        could not be judged, 2 replay divergence) and ``report_dir``.

    Raises:
        LabError: the eval stopped before writing a report (a bad key, a
            missing grant, a suite error …): the message is the reason.
        KeyboardInterrupt: the eval was cancelled (no report is published).
    """
    from pathlib import Path

    from lab.build.actions import OUTCOME
    from lab.build.commands import run_graph
    from lab.execute.events import observing
    from lab.report.summary import summary_from_report

    failure: list[BaseException] = []
    errors: list[str] = []

    def events(event: dict[str, Any]) -> None:
        if event.get("event") == "run_error":
            errors.append(str(event.get("reason")))
        if "repetition" in event:
            event["attempt"] = int(event["repetition"]) + 1
        _guarded(on_event, event, failure)

    def records(record: dict[str, Any]) -> None:
        _guarded(on_attempt, Attempt.from_record(record), failure)

    with observing(on_event=events, on_record=records):
        code = run_graph("eval", list(overrides), quiet=quiet)
    if failure:
        raise failure[0]
    report_dir = OUTCOME.get("report_dir")
    if report_dir is None:
        raise LabError(errors[-1] if errors else f"run_eval: no report was written (exit {code})")
    where = Path(report_dir)
    doc = loads_json(read_text(where / "report.json"))
    runs = [loads_json(line) for line in split_lines(read_text(where / "runs.jsonl")) if line]
    return summary_from_report(doc, runs, report_dir=where, exit_code=code)


def _guarded(callback: Callable[[Any], None] | None, item: Any, failure: list[BaseException]) -> None:
    """Call ``callback(item)`` unless an earlier callback raised; keep the first exception."""
    if callback is None or failure:
        return
    try:
        callback(item)
    except Exception as exc:  # a user callback: re-raised by run_eval after the eval
        failure.append(exc)
