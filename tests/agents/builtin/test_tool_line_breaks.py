"""Tool line numbers agree with ``grep -n`` and ``wc -l``: a line ends at ``\\n`` only (lab.agents.builtin.tools)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lab.agents.builtin.tool import ToolContext, run_tool
from lab.agents.builtin.tools import TOOLS
from lab.sandbox.process import minimal_env

# Every character str.splitlines() also breaks at, inside lines that end at "\n".
TEXT = "a\rb\n\x0bc\x0cd\n\x1ce\x1df\x1eg\n\x85h\u2028i\u2029NEEDLE\nlast without newline NEEDLE"


def use(ws: Path, name: str, **arguments: object) -> str:
    result = run_tool(TOOLS[name], arguments, ToolContext(ws, minimal_env(ws), 16_000, 30_000, lambda: None))
    return result.text


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "f.txt").write_bytes(TEXT.encode("utf-8"))
    return tmp_path


def test_read_file_counts_lines_as_wc_and_grep_do(ws: Path) -> None:
    wc = int(subprocess.run(["wc", "-l", "f.txt"], cwd=ws, capture_output=True, text=True, check=True).stdout.split()[0])
    head = use(ws, "read_file", path="f.txt")
    # wc -l counts newlines; the unterminated last line is still a line for grep -n and read_file
    assert f"lines: {wc + 1}\n" in head


def test_search_line_numbers_match_grep(ws: Path) -> None:
    grep = subprocess.run(["grep", "-n", "NEEDLE", "f.txt"], cwd=ws, capture_output=True, check=True).stdout
    expected = [int(line.split(b":")[0]) for line in grep.splitlines()]  # grep output: bytes split at \n
    found = use(ws, "search", pattern="NEEDLE")
    assert [int(n) for n in re.findall(r"f\.txt:(\d+):", found)] == expected == [4, 5]


def test_read_file_offset_starts_at_the_grep_line(ws: Path) -> None:
    assert "NEEDLE" in use(ws, "read_file", path="f.txt", offset=4, limit=1).split("\n\n", 1)[1]
