"""The progress bar's done part: green while every finished run passed, red from the first that did not."""

from __future__ import annotations

import io

from rich.console import Console

from lab.execute.progress import Display

GREEN, RED = "\x1b[32m", "\x1b[31m"


def _rendered(display: Display) -> str:
    """The bar column alone as the terminal would receive it (ANSI colours kept)."""
    out = io.StringIO()
    bar = display._column.render(display._bar.tasks[0])
    Console(file=out, force_terminal=True, color_system="standard", width=100).print(bar)
    return out.getvalue()


def test_the_done_part_is_green_while_runs_pass_and_red_after_a_failure() -> None:
    display = Display(tty=True)
    sink = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=100)
    display.start(4, console=sink)
    try:
        display.run_finished("  t r0  pass", "pass")
        display.run_skipped()
        assert display.bar_style() == "green"
        assert GREEN in _rendered(display) and RED not in _rendered(display)
        display.run_finished("  t r1  fail", "fail")
        assert display.bar_style() == "red"
        assert RED in _rendered(display)
    finally:
        display.stop()


def test_an_error_or_an_exceeded_budget_turns_it_red_too() -> None:
    for status in ("error", "budget_exceeded"):
        display = Display(tty=False, quiet=True)
        display.run_finished("x", "pass")
        display.run_finished("x", status)
        assert display.bar_style() == "red", status
