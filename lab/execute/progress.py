"""What an eval shows while it works (SPEC X6, M9).

On a terminal: a rich progress bar (runs done/total, passes, errors,
elapsed) with one line per finished run above it. Elsewhere (CI logs): the
same lines, no bar. With ``json=true``: nothing but one JSON line per run as
it finishes and the report last (the summary prints that).

doit calls :class:`LabReporter`; run actions call :func:`display`. Both talk
to one :class:`Display` per command.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from doit.reporter import ConsoleReporter

from lab.console import print_line


class Display:
    """Counts runs and draws the bar; thread-safe (runs finish in worker threads)."""

    def __init__(self, *, quiet: bool = False, tty: bool | None = None) -> None:
        self.quiet = quiet
        self.tty = sys.stdout.isatty() if tty is None else tty
        self.total = 0
        self.done = self.passes = self.errors = self.skipped = 0
        self.skipped_by: dict[str, int] = {}  # up-to-date runs per eval (run id), for per-suite counts
        self._lock = threading.Lock()
        self._bar: Any = None
        self._column: Any = None
        self._task: Any = None
        self._t0 = time.monotonic()

    def start(self, total: int, console: Any = None) -> None:
        """Show the bar for ``total`` runs (on a terminal; ``console``: a rich Console, default the terminal)."""
        self.total = total
        if self.quiet or not self.tty or total == 0:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        # The terminal itself, not sys.stdout: doit wraps sys.stdout while actions run, and a
        # redirecting bar writing through that wrapper would write into itself.
        console = Console(file=sys.__stdout__) if console is None else console
        # rich's default colour for the done part is a bright pink-red; here it is green while every
        # finished run passed, red from the first run that did not (bar_style).
        self._column = BarColumn(complete_style=self.bar_style(), finished_style=self.bar_style())
        self._bar = Progress(TextColumn("runs"), self._column, MofNCompleteColumn(),
                             TextColumn("{task.fields[tally]}"), TimeElapsedColumn(), transient=True,
                             console=console, redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task("runs", total=total, tally="")
        self._bar.start()

    def run_skipped(self, group: str = "") -> None:
        with self._lock:
            self.skipped += 1
            self.skipped_by[group] = self.skipped_by.get(group, 0) + 1
            self._advance()

    def run_finished(self, line: str, status: str) -> None:
        with self._lock:
            self.done += 1
            self.passes += status == "pass"
            self.errors += status == "error"
            self.print(line)
            self._advance()

    def print(self, text: str) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print_line(text)

    def bar_style(self) -> str:
        """The colour of the bar's done part: ``green`` while every finished run passed, else ``red``."""
        return "green" if self.passes == self.done else "red"

    def _advance(self) -> None:
        if self._bar is not None:
            self._column.complete_style = self._column.finished_style = self.bar_style()
            tally = f"{self.passes} passed · {self.errors} errors · {self.skipped} up to date"
            self._bar.update(self._task, completed=self.done + self.skipped, tally=tally)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


_DISPLAY = Display()


def display() -> Display:
    """The display of the current command."""
    return _DISPLAY


def reset_display(*, quiet: bool = False, tty: bool | None = None) -> Display:
    """Start a fresh display (once per command)."""
    global _DISPLAY
    _DISPLAY = Display(quiet=quiet, tty=tty)
    return _DISPLAY


def _is_run(task: Any) -> bool:
    return bool((getattr(task, "meta", None) or {}).get("lab") == "run")


class LabReporter(ConsoleReporter):  # type: ignore[misc]
    """doit reporter: run tasks feed the display; other tasks stay silent."""

    desc = "Reliability Lab progress"

    def initialize(self, tasks: Any, selected_tasks: Any) -> None:
        total = sum(1 for t in tasks.values() if _is_run(t)) if isinstance(tasks, dict) else 0
        display().start(total)

    def execute_task(self, task: Any) -> None:
        pass  # the run action prints its own line when it finishes

    def skip_uptodate(self, task: Any) -> None:
        uptodate_note = (getattr(task, "meta", None) or {}).get("uptodate_note")
        if uptodate_note:
            display().print(uptodate_note)
        if _is_run(task):
            meta = task.meta or {}
            display().run_skipped(str(meta.get("group", "")))
            if meta.get("events") is not None:
                meta["events"].emit("run_skipped", **meta.get("ident", {}), reason="up to date")

    def complete_run(self) -> None:
        display().stop()
        super().complete_run()
