"""The sandbox inside a run: tools, verifiers, the trust_local rule, fingerprints."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.agents.builtin.tool import ToolContext, run_tool
from lab.agents.builtin.tools import TOOLS
from lab.errors import ConfigError
from lab.execute.sandboxing import Sandbox, check_trust
from lab.execute.verifiers import run_verifiers
from lab.replay.cassette import Normaliser
from lab.sandbox.bwrap import BwrapBackend
from lab.sandbox.none import NoneBackend
from lab.sandbox.reaper import RunRoot
from lab.sandbox.workspace import create_workspace, remove_workspace, snapshot


def _ctx(workspace: Path, backend: BwrapBackend) -> ToolContext:
    return ToolContext(workspace, {}, output_chars=4000, command_timeout_ms=30_000,
                       sandbox=backend)


def test_run_command_runs_in_the_sandbox_at_workspace_without_the_lab_env(
        workspace: Path, bwrap: BwrapBackend, planted_key: str) -> None:
    argv = ["sh", "-c", "pwd; env; cat /proc/$PPID/environ; ls /root 2>&1 || true"]
    result = run_tool(TOOLS["run_command"], {"argv": argv}, _ctx(workspace, bwrap))
    assert result.error is None, result.text
    assert result.text.startswith("exit: 0\nstdout:\n/workspace\n")
    assert planted_key not in result.text and "FAKE_API_KEY" not in result.text
    assert "No such file or directory" in result.text  # /root is not there


def test_a_file_the_lab_creates_is_writable_by_the_sandboxed_commands(
        workspace: Path, bwrap: BwrapBackend) -> None:
    ctx = _ctx(workspace, bwrap)
    written = run_tool(TOOLS["write_file"], {"path": "new/dir/notes.txt", "content": "one\n"}, ctx)
    assert written.error is None, written.text
    appended = run_tool(TOOLS["run_command"], {"argv": [
        "sh", "-c", "echo two >> new/dir/notes.txt && touch new/dir/more.txt"]}, ctx)
    assert appended.text.startswith("exit: 0"), appended.text
    assert (workspace / "new/dir/notes.txt").read_text("utf-8") == "one\ntwo\n"
    assert (workspace / "new/dir/more.txt").exists()


def test_command_verifiers_run_in_the_sandbox(workspace: Path, bwrap: BwrapBackend) -> None:
    specs = [{"id": "cwd", "kind": "command", "argv": ["sh", "-c", 'test "$PWD" = /workspace']},
             {"id": "no-net", "kind": "command", "argv": ["python3", "-c",
              "import socket; socket.create_connection(('127.0.0.1', 9), timeout=2)"],
              "expectExit": 1},
             {"id": "checks", "kind": "command", "argv": ["python3", "check.py"],
              "expectStdoutIncludes": "ALL 1 CHECKS PASSED"}]
    results = run_verifiers(specs, workspace=workspace, baseline=snapshot(workspace), events=[],
                            env={}, sandbox=bwrap)
    assert [(r.id, r.status) for r in results] == [("cwd", "pass"), ("no-net", "pass"),
                                                    ("checks", "pass")], results


def _sandbox(requested: str, backend: object) -> Sandbox:
    return Sandbox(backend=backend, requested=requested, run_root=Path("/nonexistent"))  # type: ignore[arg-type]


@pytest.mark.parametrize("requested, says", [("none", "sandbox=none"),
                                             ("auto", "sandbox=auto fell back to none")])
def test_unsandboxed_third_party_suites_need_trust_local(requested: str, says: str) -> None:
    sandbox = _sandbox(requested, NoneBackend())
    with pytest.raises(ConfigError) as caught:
        check_trust(sandbox, third_party=True, trust_local=False, where="suite x (/tmp/x)")
    message = str(caught.value)
    assert "\n" not in message and says in message and "trust_local=true" in message
    assert "suite x (/tmp/x)" in message and "apt-get install bubblewrap" in message
    check_trust(sandbox, third_party=True, trust_local=True, where="suite x")
    check_trust(sandbox, third_party=False, trust_local=False, where="suite x")


def test_a_sandboxed_third_party_suite_needs_no_trust_local(bwrap: BwrapBackend) -> None:
    check_trust(_sandbox("auto", bwrap), third_party=True, trust_local=False, where="suite x")


HOST = "/tmp/lab-runs-0/123-abcdef01/lab-x1y2z3"
_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_text, min_size=1, max_size=5))
def test_a_request_fingerprints_alike_under_every_backend(parts: list[str]) -> None:
    """Whatever surrounds the task copy's path in a tool output, the normalised
    request is the same whether commands saw the host path or /workspace."""
    normalise = Normaliser(workspace=Path(HOST), aliases=("/workspace",))

    def request(path: str) -> dict[str, object]:
        return {"messages": [{"role": "tool", "content": path.join(parts)},
                             {"role": "user", "content": f"cd {path}"}]}

    assert normalise(request("/workspace")) == normalise(request(HOST))


@pytest.mark.parametrize("output", ["/workspace/check.py:3: AssertionError",
                                    "cwd is /workspace\n", "File \"/workspace/a.py\", line 1"])
def test_recorded_outputs_with_the_sandbox_path_fingerprint_like_host_ones(output: str) -> None:
    normalise = Normaliser(workspace=Path(HOST), aliases=("/workspace",))
    host = {"messages": [{"role": "tool", "content": output.replace("/workspace", HOST)}]}
    inside = {"messages": [{"role": "tool", "content": output}]}
    assert normalise(host) == normalise(inside)
    assert "<workspace>" in str(normalise(inside))


def test_the_sandbox_default_of_tools_is_the_host(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path, {}, output_chars=4000, command_timeout_ms=30_000)
    result = run_tool(TOOLS["run_command"], {"argv": ["sh", "-c", "pwd"]}, ctx)
    assert result.text.startswith(f"exit: 0\nstdout:\n{os.path.realpath(tmp_path)}\n")


def _fixture_with_a_hostile_git_config(tmp_path: Path) -> tuple[Path, Path]:
    """A fixture whose own .git/config runs ./fsmonitor.sh on every `git add`."""
    fixture, pwned = tmp_path / "fixture", tmp_path / "host" / "pwned"
    fixture.mkdir()
    pwned.parent.mkdir(mode=0o777)
    (fixture / "a.txt").write_text("data\n", "utf-8")
    (fixture / "fsmonitor.sh").write_text(f"#!/bin/sh\ntouch {pwned}\nexit 1\n", "utf-8")
    (fixture / "fsmonitor.sh").chmod(0o755)
    (fixture / ".git").mkdir()
    (fixture / ".git" / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ./fsmonitor.sh\n", "utf-8")
    return fixture, pwned


def test_fixture_git_set_up_runs_inside_the_sandbox(tmp_path: Path, bwrap: BwrapBackend,
                                                    run_root: RunRoot) -> None:
    fixture, pwned = _fixture_with_a_hostile_git_config(tmp_path)
    workspace = create_workspace(fixture, git_init=True, parent=run_root.path, sandbox=bwrap)
    assert not pwned.exists(), "the fixture's git config ran on the host"
    log = run_tool(TOOLS["run_command"], {"argv": ["git", "log", "--format=%s %an"]},
                   _ctx(workspace, bwrap))
    assert "fixture Reliability Lab" in log.text, log.text
    remove_workspace(workspace)


def test_fixture_git_set_up_on_the_host_would_run_the_fixture_config(tmp_path: Path) -> None:
    """The control: the same fixture set up without a sandbox runs its hook."""
    fixture, pwned = _fixture_with_a_hostile_git_config(tmp_path)
    workspace = create_workspace(fixture, git_init=True, parent=tmp_path)
    assert pwned.exists()
    remove_workspace(workspace)
