"""lab.agents.builtin.tools: each tool on real files and real processes in tmp_path."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.agents.builtin.tool import ToolContext, ToolResult, run_tool
from lab.agents.builtin.tools import SEARCH_MAX_MATCHES, TOOLS, tool_schemas
from lab.errors import ConfigError
from lab.sandbox.process import minimal_env

PY = sys.executable
BLOCK = "import os; r, w = os.pipe(); os.read(r, 1)"  # blocks until killed


def ctx(ws: Path, *, output_chars: int = 16_000, command_timeout_ms: int = 30_000,
        remaining_s: float | None = None) -> ToolContext:
    return ToolContext(ws, minimal_env(ws), output_chars, command_timeout_ms,
                       lambda: remaining_s)


def use(ws: Path, name: str, **arguments: Any) -> ToolResult:
    return run_tool(TOOLS[name], arguments, ctx(ws))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_read_file_reports_path_sha256_lines_and_content(workspace: Path) -> None:
    data = (workspace / "calc.py").read_bytes()
    result = use(workspace, "read_file", path="./calc.py")
    assert result.ok
    assert result.text == f"path: calc.py\nsha256: {sha(data)}\nlines: 2\n\n{data.decode()}"


def test_read_file_offset_and_limit_state_which_lines_are_shown(workspace: Path) -> None:
    (workspace / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    text = use(workspace, "read_file", path="ten.txt", offset=3, limit=2).text
    assert text.endswith(
        "lines: 10\n\nline 3\nline 4\n[lines 3-4 of 10 shown; continue with offset=5]")


def test_read_file_truncates_at_output_chars_with_marker(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 9 + "\n" + "y" * 9 + "\n" + "z" * 9 + "\n")
    result = run_tool(TOOLS["read_file"], {"path": "big.txt"}, ctx(workspace, output_chars=25))
    body = result.text.split("\n\n", 1)[1]
    assert body == ("x" * 9 + "\n" + "y" * 9 + "\n"
                    "[truncated at 25 chars: lines 1-2 of 3 shown; continue with offset=3]")


def test_read_file_of_binary_file_gives_sha_but_no_content(workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    text = use(workspace, "read_file", path="blob.bin").text
    assert "sha256: " + sha(b"\x00\x01\x02") in text
    assert text.endswith("[binary file: 3 bytes, content not shown]")


def test_read_file_of_missing_file_is_an_observation(workspace: Path) -> None:
    result = use(workspace, "read_file", path="nope.py")
    assert not result.ok and result.text.startswith("error: cannot read 'nope.py'")


def test_write_file_creates_parent_directories(workspace: Path) -> None:
    result = use(workspace, "write_file", path="pkg/sub/new.py", content="x = 1\n")
    assert (workspace / "pkg/sub/new.py").read_text() == "x = 1\n"
    assert result.text == "path: pkg/sub/new.py\nsha256: " + sha(b"x = 1\n") + "\nbytes: 6"


def test_edit_file_replaces_the_unique_occurrence(workspace: Path) -> None:
    digest = sha((workspace / "calc.py").read_bytes())
    result = use(workspace, "edit_file", path="calc.py", sha256=digest,
                 old="range(n)", new="range(1, n + 1)")
    new = (workspace / "calc.py").read_bytes()
    assert new == b"def total(n):\n    return sum(range(1, n + 1))\n"
    assert result.text == f"path: calc.py\nsha256: {sha(new)}\nbytes: {len(new)}"


def test_edit_file_refuses_a_stale_sha256(workspace: Path) -> None:
    before = (workspace / "calc.py").read_bytes()
    result = use(workspace, "edit_file", path="calc.py", sha256=sha(b"old version"),
                 old="range(n)", new="range(1, n + 1)")
    assert result.text == "error: stale sha256: file changed since you read it; read it again"
    assert (workspace / "calc.py").read_bytes() == before


@pytest.mark.parametrize(("old", "count"), [("nothing like this", 0), ("(n)", 2)])
def test_edit_file_refuses_old_text_not_occurring_exactly_once(
        workspace: Path, old: str, count: int) -> None:
    data = (workspace / "calc.py").read_bytes()
    result = use(workspace, "edit_file", path="calc.py", sha256=sha(data), old=old, new="m")
    assert result.error is not None and f"occurs {count} times" in result.error
    assert (workspace / "calc.py").read_bytes() == data


def test_list_dir_marks_directories_and_links(workspace: Path, outside: Path) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "link").symlink_to(outside)
    assert use(workspace, "list_dir").text == (
        "path: .\n\ncalc.py\ndata.txt\nlink@\npkg/\ntest_calc.py")


def test_search_lists_path_line_text_and_skips_git(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "calc.py").write_text("def total(n): pass\n")
    result = use(workspace, "search", pattern=r"total\(")
    assert result.text == ("calc.py:1: def total(n):\n"
                           "test_calc.py:2: assert total(3) == 6, total(3)")


def test_search_states_truncation_after_the_match_cap(workspace: Path) -> None:
    (workspace / "many.txt").write_text("hit\n" * (SEARCH_MAX_MATCHES + 5))
    lines = use(workspace, "search", pattern="hit", path="many.txt").text.splitlines()
    assert len(lines) == SEARCH_MAX_MATCHES + 1
    assert lines[-1].startswith(f"[truncated: stopped after {SEARCH_MAX_MATCHES} matches")


def test_search_with_invalid_regex_is_a_tool_error(workspace: Path) -> None:
    result = use(workspace, "search", pattern="(unclosed")
    assert result.error is not None and result.error.startswith("invalid regex '(unclosed'")


def test_search_without_matches_says_so(workspace: Path) -> None:
    assert use(workspace, "search", pattern="zebra").text == "no matches for 'zebra' in ."


def test_run_command_reports_exit_stdout_and_stderr(workspace: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = use(workspace, "run_command", argv=[PY, "-c", code])
    assert result.ok
    assert result.text == "exit: 3\nstdout:\nout\n\nstderr:\nerr\n"


def test_run_command_runs_in_the_workspace_without_the_users_environment(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    code = "import os; print(os.getcwd()); print(os.environ.get('OPENAI_API_KEY'))"
    result = use(workspace, "run_command", argv=[PY, "-c", code])
    assert f"stdout:\n{workspace.resolve()}\nNone\n" in result.text


def test_run_command_bounds_output_and_states_truncation(workspace: Path) -> None:
    code = "print('a' * 5000); print('TAIL')"
    result = run_tool(TOOLS["run_command"], {"argv": [PY, "-c", code]},
                      ctx(workspace, output_chars=100))
    marker = "[truncated: stdout was 5006 bytes; showing its first 50 and last 50 chars]"
    assert marker in result.text
    assert "TAIL" in result.text and len(result.text) < 300


@pytest.mark.parametrize("limit", ["timeoutMs", "command_timeout_ms", "remaining_s"])
def test_run_command_timeout_is_capped_by_every_limit(workspace: Path, limit: str) -> None:
    values = {"timeoutMs": 60_000, "command_timeout_ms": 60_000, "remaining_s": None}
    values[limit] = 0.2 if limit == "remaining_s" else 200
    context = ctx(workspace, command_timeout_ms=int(values["command_timeout_ms"]),
                  remaining_s=values["remaining_s"])
    argv = [PY, "-c", BLOCK]
    result = run_tool(TOOLS["run_command"], {"argv": argv, "timeoutMs": values["timeoutMs"]},
                      context)
    assert result.error == "timed out after 200 ms"
    assert result.text.startswith("error: timed out after 200 ms\nstdout:")


def test_run_command_that_cannot_start_is_an_observation(workspace: Path) -> None:
    result = use(workspace, "run_command", argv=["no-such-program-xyz"])
    assert result.text == "error: cannot start 'no-such-program-xyz': program not found"


@pytest.mark.parametrize(("name", "arguments", "problem"), [
    ("read_file", {}, "'path' is a required property"),
    ("run_command", {"argv": "ls -la"}, "argv: 'ls -la' is not of type 'array'"),
    ("write_file", {"path": "a", "content": "b", "mode": "x"}, "Additional properties"),
    ("list_dir", ["."], "['.'] is not of type 'object'"),
])
def test_arguments_are_checked_against_the_schema(
        workspace: Path, name: str, arguments: Any, problem: str) -> None:
    result = run_tool(TOOLS[name], arguments, ctx(workspace))
    assert result.error is not None and result.error.startswith(f"invalid arguments for {name}")
    assert problem in result.error


def test_every_tool_declares_a_known_effect() -> None:
    assert {name: tool.effect for name, tool in TOOLS.items()} == {
        "list_dir": "read", "read_file": "read", "write_file": "write", "edit_file": "write",
        "search": "read", "run_command": "process"}


def test_tool_schemas_keep_the_given_order_and_refuse_unknown_names() -> None:
    schemas = tool_schemas(("run_command", "read_file"))
    assert [s["function"]["name"] for s in schemas] == ["run_command", "read_file"]
    assert schemas[1]["function"]["parameters"]["required"] == ["path"]
    with pytest.raises(ConfigError, match="unknown tool"):
        tool_schemas(("read_file", "teleport"))
