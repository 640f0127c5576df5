"""Markdown tables of any length, line by line, as ``tabulate`` lays them out (GitHub format).

``tabulate`` pads every column to its widest cell, so it needs every row at
once. :func:`table_lines` reads a re-iterable of rows twice instead: once
for the column widths, once to write the rows, and yields the same text as
``tabulate(rows, headers, tablefmt="github", disable_numparse=True)`` for
cells that hold no line break (report cells never do: see
``lab.report.markdown``). Widths are measured with tabulate's own width
function, so escape codes and wide characters count as tabulate counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import tabulate as _tabulate

# tabulate's width rules (private names, pinned by tests/report/test_tables.py against tabulate itself)
_ANSI = getattr(_tabulate, "_ansi_codes")
_CHOOSE_WIDTH_FN: Callable[[bool, bool, bool], Callable[[str], int]] = getattr(_tabulate, "_choose_width_fn")
MIN_PADDING = int(getattr(_tabulate, "MIN_PADDING"))


def table_lines(rows: Iterable[Sequence[Any]], headers: Sequence[str],
                cell: Callable[[Any], str] = str) -> Iterator[str]:
    """The lines of a GitHub-format table over ``rows`` (iterated twice), ``cell`` applied to every value.

    Args:
        rows: a re-iterable of rows (a list, or a ``lab.report.spool.Spool``).
        headers: the column headers.
        cell: turns a value into its cell text (one line, no surrounding whitespace).
    """
    wide = bool(getattr(_tabulate, "wcwidth", None) is not None and getattr(_tabulate, "WIDE_CHARS_MODE", False))
    measures = {invisible: _CHOOSE_WIDTH_FN(invisible, wide, False) for invisible in (False, True)}
    # tabulate measures with the escape-aware width only when some cell holds an escape code
    widths = {invisible: [fn(h) + MIN_PADDING for h in headers] for invisible, fn in measures.items()}
    has_invisible = any(_ANSI.search(h) for h in headers)
    count = 0
    for row in rows:
        count += 1
        for i, value in enumerate(row):
            text = cell(value)
            has_invisible = has_invisible or _ANSI.search(text) is not None
            for invisible, fn in measures.items():
                widths[invisible][i] = max(widths[invisible][i], fn(text))
    if count == 0:
        yield from _tabulate.tabulate([], headers=list(headers), tablefmt="github", disable_numparse=True).split("\n")
        return
    width_of, column = measures[has_invisible], widths[has_invisible]
    yield _line([_pad(h, w, width_of) for h, w in zip(headers, column, strict=True)])
    yield "|" + "|".join("-" * (w + 2) for w in column) + "|"
    for row in rows:
        yield _line([_pad(cell(value), w, width_of) for value, w in zip(row, column, strict=True)])


def _pad(text: str, width: int, width_of: Callable[[str], int]) -> str:
    return text + " " * (width - width_of(text))


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
