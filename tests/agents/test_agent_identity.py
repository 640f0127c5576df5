"""A command agent's identity (lab.agents.identity): each part of it, changed alone, changes the digest.

Real files in ``tmp_path``: a script named by an absolute path, a ``pypi``
venv layout with a dist-info ``RECORD``, an ``npm`` prefix with
``package.json`` and its lock file, and a program found on ``PATH``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from lab.agents.command import CommandPreset
from lab.agents.identity import agent_identity
from lab.report.markdown import agent_text
from tests.helpers.composed import composed


def preset(*extra: str) -> CommandPreset:
    return CommandPreset.from_config(composed("agent=reference", "provider=scripted", *extra).data["agent"])


def executable(path: Path, text: str = "#!/bin/sh\necho agent\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_reference_agent_is_named_by_its_interpreter_and_script(tmp_path: Path) -> None:
    identity = agent_identity(preset(), tmp_path)
    assert identity["name"] == "reference" and identity["version"] == "0.1.0"
    assert identity["executable"] == sys.executable and identity["reported"] is None
    assert len(identity["digest"]) == 64
    assert agent_identity(preset(), tmp_path) == identity  # the same files: the same identity


def test_editing_a_script_named_by_an_absolute_path_changes_the_digest(tmp_path: Path) -> None:
    script = tmp_path / "my_agent.py"
    script.write_text("print('one')\n")
    argv = f'agent.command.argv=["{{python}}","{script}","{{model}}"]'
    before = agent_identity(preset(argv), tmp_path)
    script.write_text("print('two')\n")
    after = agent_identity(preset(argv), tmp_path)
    assert before["digest"] != after["digest"] and before["executable"] == after["executable"]
    script.write_text("print('one')\n")  # back to the first bytes: the first identity
    assert agent_identity(preset(argv), tmp_path)["digest"] == before["digest"]


def test_another_program_of_the_same_name_on_path_is_another_agent(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = executable(tmp_path / "a" / "my-agent"), executable(tmp_path / "b" / "my-agent")
    argv = 'agent.command.argv=["my-agent","{model}"]'
    monkeypatch.setenv("PATH", f"{first.parent}{os.pathsep}{os.environ['PATH']}")
    one = agent_identity(preset(argv), tmp_path)
    monkeypatch.setenv("PATH", f"{second.parent}{os.pathsep}{os.environ['PATH']}")
    two = agent_identity(preset(argv), tmp_path)
    assert (one["executable"], two["executable"]) == (str(first), str(second))
    assert one["digest"] != two["digest"]
    executable(second, "#!/bin/sh\necho other build\n")  # a rebuilt binary in place
    assert agent_identity(preset(argv), tmp_path)["digest"] != two["digest"]


def pypi_install(data_dir: Path, version: str, record: str) -> None:
    """The layout ``lab agents install`` leaves for aider-chat: a venv with its dist-info."""
    venv = data_dir / "agents" / "aider" / "venv"
    executable(venv / "bin" / "aider", "#!/usr/bin/python3\nfrom aider.main import main\nmain()\n")
    dist = venv / "lib" / "python3.11" / "site-packages" / f"aider_chat-{version}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "RECORD").write_text(record)
    (data_dir / "agents" / "aider" / "installed-version").write_text(f"{version}\n")


def test_a_pypi_agent_reports_its_installed_version_and_digests_its_record(tmp_path: Path) -> None:
    aider = CommandPreset.from_config(composed("agent=aider", "provider=scripted").data["agent"])
    pypi_install(tmp_path, "0.86.2", "aider/main.py,sha256=AAAA,100\n")
    first = agent_identity(aider, tmp_path)
    assert first["reported"] == "0.86.2"
    assert first["executable"] == str(tmp_path / "agents" / "aider" / "venv" / "bin" / "aider")
    # A reinstall with one file changed (pip rewrites RECORD with its new hash): another agent.
    pypi_install(tmp_path, "0.86.2", "aider/main.py,sha256=BBBB,100\n")
    assert agent_identity(aider, tmp_path)["digest"] != first["digest"]


def test_an_npm_agent_reports_its_package_json_version_and_digests_its_lock(tmp_path: Path) -> None:
    codex = CommandPreset.from_config(composed("agent=codex", "provider=scripted").data["agent"])
    prefix = tmp_path / "agents" / "codex" / "npm" / "node_modules"
    executable(prefix / ".bin" / "codex", "#!/usr/bin/env node\n")
    manifest = prefix / "@openai" / "codex" / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": "@openai/codex", "version": "0.169.0"}))
    (prefix / ".package-lock.json").write_text(json.dumps({"packages": {"a": {"integrity": "sha512-1"}}}))
    first = agent_identity(codex, tmp_path)
    assert first["reported"] == "0.169.0"
    (prefix / ".package-lock.json").write_text(json.dumps({"packages": {"a": {"integrity": "sha512-2"}}}))
    assert agent_identity(codex, tmp_path)["digest"] != first["digest"]  # a dependency changed


def test_a_missing_program_still_has_an_identity(tmp_path: Path) -> None:
    identity = agent_identity(preset('agent.command.argv=["no-such-agent-program","{model}"]'), tmp_path)
    assert identity["executable"] is None and len(identity["digest"]) == 64


def test_the_report_names_the_version_the_package_reports_and_the_digest() -> None:
    agent = {"name": "aider", "kind": "command", "version": "0.86.2", "reported": "0.86.3",
             "digest": "3f2a9c1e0b7d" + "0" * 52, "executable": "/x/bin/aider"}
    assert agent_text(agent) == "aider 0.86.2 (reports 0.86.3, digest 3f2a9c1e0b7d)"
    assert agent_text({"name": "builtin", "kind": "builtin", "version": None}) == "builtin"
