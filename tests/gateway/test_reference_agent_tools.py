"""The reference agent's tools and arguments, in process (its loop: test_reference_agent.py)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from tests.helpers.lab_process import ROOT

if TYPE_CHECKING:
    from lab.agents.reference.agent import Tools

# The agent (and with it the openai SDK, about a second) is imported when these tests run, on the one test
# worker that runs test_reference_agent.py too, not when each worker collects this module.
pytestmark = pytest.mark.xdist_group("reference-agent")


@pytest.fixture
def agent() -> ModuleType:
    from lab.agents.reference import agent

    return agent


@pytest.fixture
def tools(agent: ModuleType, tmp_path: Path) -> Tools:
    return agent.Tools(tmp_path, timeout_s=5, max_output=50)  # type: ignore[no-any-return]


def test_it_imports_nothing_from_lab() -> None:
    tree = ast.parse((ROOT / "lab" / "agents" / "reference" / "agent.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert not any(name == "lab" or name.startswith("lab.") for name in imported)


def test_write_file_creates_directories(tools: Tools, tmp_path: Path) -> None:
    assert tools.call("write_file", '{"path": "a/b.txt", "content": "é"}') == "wrote 2 bytes to a/b.txt"
    assert (tmp_path / "a/b.txt").read_text() == "é"


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/escape.txt"])
def test_write_file_stays_in_the_working_directory(tools: Tools, tmp_path: Path, path: str) -> None:
    assert tools.call("write_file", f'{{"path": "{path}", "content": "x"}}') == \
        f"error: {path} is outside the working directory"


def test_shell_reports_the_exit_code_and_both_streams(tools: Tools) -> None:
    assert tools.call("shell", '{"command": "echo out; echo err >&2; exit 3"}') == "exit code: 3\nout\nerr\n"


def test_shell_output_is_cut_to_its_tail(tools: Tools) -> None:
    result = tools.call("shell", '{"command": "seq 1 100"}')

    assert result.startswith("exit code: 0\n[… 242 characters cut …]\n")
    assert result.endswith("100\n")


def test_shell_runs_in_the_working_directory_with_stdin_closed(agent: ModuleType, tmp_path: Path) -> None:
    roomy = agent.Tools(tmp_path, timeout_s=5, max_output=1000)

    assert roomy.call("shell", '{"command": "pwd; cat"}') == f"exit code: 0\n{tmp_path}\n"


def test_a_shell_command_past_its_timeout_is_killed_with_its_group(agent: ModuleType, tmp_path: Path) -> None:
    quick = agent.Tools(tmp_path, timeout_s=0.2, max_output=100)

    result = quick.call("shell", '{"command": "tail -f /dev/null & wait"}')

    assert result == "timed out after 0.2 s (process group killed)\n"


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("shell", "not json", "error: arguments are not JSON"),
    ("shell", "[1]", "error: arguments must be a JSON object"),
    ("rm", "{}", "error: unknown tool or bad arguments: rm {}"),
    ("write_file", '{"path": "a"}', "error: unknown tool or bad arguments"),
])
def test_bad_calls_become_text_for_the_model(tools: Tools, name: str, arguments: str, message: str) -> None:
    assert tools.call(name, arguments).startswith(message)


def test_without_a_key_it_exits_2(agent: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    assert agent.main(["--model", "m", "--prompt", "x"]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err


def test_a_missing_prompt_file_exits_2(agent: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "token")

    assert agent.main(["--model", "m", "--prompt-file", str(tmp_path / "missing.txt")]) == 2
    assert "cannot read the prompt file" in capsys.readouterr().err


def test_prompt_and_prompt_file_exclude_each_other(agent: ModuleType) -> None:
    with pytest.raises(SystemExit) as info:
        agent.parse_args(["--model", "m", "--prompt", "x", "--prompt-file", "f"])

    assert info.value.code == 2
