"""The streamed Markdown table is tabulate's GitHub table, byte for byte, and reads its rows from a spool."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from lab.report.markdown import _cell
from lab.report.spool import Spool
from lab.report.tables import table_lines

# Cell text as report.md cells are (one line, stripped), with what tabulate treats specially:
# escape codes, "True"/"False", numbers, pipes, empty cells, wide and combining characters.
PIECES = st.sampled_from(["", "a", "task-7", "True", "False", "12", "-3.5", "1,000", "\x1b[31m", "\x1b[0m",
                          "\x1b]8;;http://x\x1b\\", "漢字", "é", "e\u0301", "|", "\\", "—", " ", "\t", "<b>&"])
CELLS = st.lists(PIECES, max_size=6).map(lambda parts: _cell("".join(parts)))


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    width = draw(st.integers(1, 5))
    headers = draw(st.lists(st.sampled_from(["", "task", "rep", "status", "failing check", "detail"]),
                            min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(CELLS, min_size=width, max_size=width), max_size=12))
    return headers, rows


@settings(max_examples=50, deadline=None)
@given(tables())
def test_lines_equal_tabulate(table: tuple[list[str], list[list[str]]]) -> None:
    headers, rows = table
    expected = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    assert "\n".join(table_lines(rows, headers)) == expected


def test_rows_are_read_from_a_spilled_spool(tmp_path: Path) -> None:
    spool = Spool(tmp_path, limit=3)
    rows = [[f"task-{n}", str(n), "x" * (n % 7)] for n in range(50)]
    for row in rows:
        spool.append(row)
    assert list(tmp_path.iterdir())  # spilled to a file
    expected = tabulate(rows, headers=["task", "rep", "detail"], tablefmt="github", disable_numparse=True)
    assert "\n".join(table_lines(spool, ["task", "rep", "detail"])) == expected
    spool.close()
    assert not list(tmp_path.iterdir())


def test_cells_are_made_by_the_given_function() -> None:
    rows = [("a|b", 1), ("two\nlines", None)]
    expected = tabulate([[_cell(c) for c in row] for row in rows], headers=["x", "y"], tablefmt="github",
                        disable_numparse=True)
    assert "\n".join(table_lines(rows, ["x", "y"], cell=_cell)) == expected
