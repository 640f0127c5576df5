"""Path confinement (SPEC H2): every path-taking tool refuses every escape.

Each case runs the real loop with the scripted provider against a real
workspace holding real symlinks to a directory beside it; the refused call
must be an observation, the outside files untouched and unread.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import Recording, answer, call, of_type, run, scripted

from lab.agents.builtin.policy import Policy

SECRET = "top secret\n"
SECRET_SHA = hashlib.sha256(SECRET.encode()).hexdigest()

ESCAPES = {
    "absolute-file": lambda out: str(out / "secret.txt"),
    "absolute-dir": lambda out: str(out),
    "dotdot": lambda out: "../outside/secret.txt",
    "dotdot-deep": lambda out: "sub/../../outside/secret.txt",
    "symlink-to-file": lambda out: "leak.txt",
    "symlink-to-dir": lambda out: "leakdir",
    "through-symlinked-dir": lambda out: "leakdir/secret.txt",
    "new-file-through-symlinked-dir": lambda out: "leakdir/planted.txt",
    "home": lambda out: "~/secret.txt",
}

TOOL_ARGS = {
    "list_dir": lambda p: {"path": p},
    "read_file": lambda p: {"path": p},
    "write_file": lambda p: {"path": p, "content": "pwned\n"},
    "edit_file": lambda p: {"path": p, "sha256": SECRET_SHA, "old": "top", "new": "pwned"},
    "search": lambda p: {"pattern": "secret", "path": p},
}


@pytest.fixture
def linked(workspace: Path, outside: Path) -> Path:
    (workspace / "sub").mkdir()
    os.symlink(outside / "secret.txt", workspace / "leak.txt")
    os.symlink(outside, workspace / "leakdir")
    return workspace


def outside_state(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(outside.iterdir())}


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("tool", sorted(TOOL_ARGS))
def test_every_tool_refuses_every_escape(linked: Path, outside: Path, tool: str,
                                         escape: str) -> None:
    before = outside_state(outside)
    arguments: dict[str, Any] = TOOL_ARGS[tool](ESCAPES[escape](outside))
    provider = Recording(scripted(call(tool, **arguments), answer("DONE: tried")))
    result = run(linked, provider, policy=Policy("full"))
    event = of_type(result, "tool_call")[0]
    assert event["outcome"] == "error"
    assert any(word in event["error"] for word in ("escapes the workspace", "is absolute",
                                                   "starts with '~'")), event["error"]
    observation = provider.requests()[1]["messages"][-1]["content"]
    assert observation == "error: " + event["error"]
    assert "top secret" not in observation
    assert outside_state(outside) == before
    assert result.stop_reason == "answered"  # a refused call never crashes the loop


def test_search_of_the_whole_workspace_does_not_follow_links(linked: Path) -> None:
    provider = Recording(scripted(call("search", pattern="top secret"), answer("DONE")))
    result = run(linked, provider)
    assert of_type(result, "tool_call")[0]["outcome"] == "ok"
    assert provider.requests()[1]["messages"][-1]["content"] == "no matches for 'top secret' in ."


def test_links_that_stay_inside_are_followed(workspace: Path) -> None:
    os.symlink(workspace / "calc.py", workspace / "alias.py")
    provider = Recording(scripted(call("read_file", path="alias.py"), answer("DONE")))
    run(workspace, provider)
    assert provider.requests()[1]["messages"][-1]["content"].startswith("path: calc.py\n")


def test_run_command_runs_with_the_workspace_as_cwd(workspace: Path) -> None:
    provider = Recording(scripted(call("run_command", argv=["pwd"]), answer("DONE")))
    run(workspace, provider)
    assert f"stdout:\n{workspace.resolve()}\n" in provider.requests()[1]["messages"][-1]["content"]


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_fifos_are_refused_not_opened(workspace: Path, tool: str) -> None:
    os.mkfifo(workspace / "pipe")
    arguments = {"path": "pipe", "read_file": {}, "write_file": {"content": "x"},
                 "edit_file": {"sha256": "0" * 64, "old": "a", "new": "b"}}[tool]
    arguments = {"path": "pipe", **arguments}
    result = run(workspace, scripted(call(tool, **arguments), answer("DONE")))
    [event] = [e for e in result.events if e["type"] == "tool_call"]
    assert event["outcome"] == "error"
    assert "not a regular file" in event["error"] or "no such file" in event["error"]
