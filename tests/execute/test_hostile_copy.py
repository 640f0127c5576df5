"""What an agent leaves in its task copy is judged, never an infrastructure error or a lost record.

Verifiers and tools over a copy nested thousands deep or holding a 900 MiB
(sparse) file; a command agent's ``ignore`` patterns against links it planted;
where a command agent's ``agent-*`` directory lives; a task copy that cannot be
removed. Real trees in tmp_path.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.agents.builtin.tool import ToolContext, run_tool
from lab.agents.builtin.tools import TOOLS
from lab.agents.command import preset_problems
from lab.agents.ignore import ignored_entries, matches
from lab.execute.command_run import _make_run_dir, _set_aside
from lab.execute.verifiers import run_verifiers
from lab.sandbox.reaper import LOCK_NAME, reap_stale, runs_dir
from lab.sandbox.workspace import snapshot
from tests.helpers.hostile_tree import fast_dir, immutable, nest, release

GIANT = 900 << 20


def _verify(workspace: Path, *specs: dict[str, Any], baseline: dict[str, str] | None = None) -> dict[str, Any]:
    results = run_verifiers(list(specs), workspace=workspace, baseline=baseline or {}, events=[], env={})
    return {r.id: r for r in results}


def test_a_deep_tree_fails_tree_diff_with_the_bound_as_reason(tmp_path: Path) -> None:
    with fast_dir(tmp_path / "fallback") as workspace:
        (workspace / "main.py").write_text("print(1)\n")
        baseline = snapshot(workspace)
        nest(workspace, 1_200)
        results = _verify(workspace, {"id": "scope", "kind": "tree-diff-within", "allowed": ["main.py"]},
                          {"id": "kept", "kind": "file-contains", "path": "main.py", "text": "print"},
                          baseline=baseline)
    assert results["scope"].status == "fail"  # an error ("verifier crashed: RecursionError") before
    assert "deeper than 512 levels" in results["scope"].detail
    assert results["kept"].status == "pass"


def test_a_900_mib_sparse_file_is_never_read_whole(tmp_path: Path) -> None:
    giant = tmp_path / "out.bin"
    with giant.open("wb") as handle:
        handle.truncate(GIANT)  # sparse: no disk, but 900 MiB to read
    results = _verify(tmp_path,
                      {"id": "eq", "kind": "file-equals", "path": "out.bin", "sha256": "0" * 64},
                      {"id": "has", "kind": "file-contains", "path": "out.bin", "text": "x"},
                      {"id": "absent", "kind": "file-absent", "path": "out.bin"},
                      {"id": "scope", "kind": "tree-diff-within", "allowed": []})
    for name in ("eq", "has"):
        assert results[name].status == "fail"
        assert results[name].detail == f"out.bin is {GIANT} bytes, more than the 64 MiB the lab reads of one file"
    assert results["absent"].status == "fail" and "exists" in results["absent"].detail
    assert results["scope"].status == "fail" and "more than 512 MiB of file content" in results["scope"].detail
    ctx = ToolContext(tmp_path, {}, output_chars=4000, command_timeout_ms=10_000)
    read = run_tool(TOOLS["read_file"], {"path": "out.bin"}, ctx)
    assert read.text.startswith("error: 'out.bin' is 943718400 bytes, more than the 64 MiB")


def test_search_in_a_deep_tree_answers_and_says_where_it_stopped(tmp_path: Path) -> None:
    with fast_dir(tmp_path / "fallback") as workspace:
        (workspace / "a.txt").write_text("needle here\n")
        nest(workspace, 1_200)
        ctx = ToolContext(workspace, {}, output_chars=4000, command_timeout_ms=10_000)
        result = run_tool(TOOLS["search"], {"pattern": "needle"}, ctx)
    assert result.text.startswith("a.txt:1: needle here")  # a RecursionError out of the tool before
    assert "[search stopped early: the task copy nests directories deeper than 512 levels" in result.text


@pytest.mark.parametrize(("pattern", "rel", "is_dir", "expected"), [
    (".hist", ".hist", False, True), ("logs/*", "logs/a.txt", False, True), ("logs/*", "logs/a/b", False, False),
    ("logs/**", "logs/a/b", False, True), ("**/x.md", "x.md", False, True), ("**/x.md", "a/b/x.md", False, True),
    ("cache/", "cache", False, False), ("cache/", "cache", True, True), ("*.log", "a/b.log", False, False),
    ("./.agent/h.md", ".agent/h.md", False, True)])
def test_ignore_patterns_match_relative_paths(pattern: str, rel: str, is_dir: bool, expected: bool) -> None:
    assert matches(pattern, rel, is_dir=is_dir) is expected


def test_a_symlinked_ignore_target_on_the_host_survives(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "logs").mkdir(parents=True)
    for name in ("history.md", "logs/today.log"):
        (host / name).write_text("host file\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".my-agent").symlink_to(host)  # planted by the agent
    (workspace / "logs").symlink_to(host / "logs")
    (workspace / "own").mkdir()
    (workspace / "own" / "note.md").write_text("agent's own\n")
    patterns = (".my-agent/history.md", "logs/*", "own/*.md")
    assert ignored_entries(workspace, patterns) == ["own/note.md"]
    record: dict[str, Any] = {}
    _set_aside(workspace, patterns, record)
    assert (host / "history.md").read_text() == "host file\n"
    assert (host / "logs" / "today.log").read_text() == "host file\n"
    assert not (workspace / "own" / "note.md").exists() and record == {}


@pytest.mark.parametrize(("pattern", "why"), [
    ("/etc/passwd", "is absolute"), ("../outside/*", "has a '..' part"), ("a/../../b", "has a '..' part"),
    ("~/.ssh/*", "starts with '~'"), ("", "is empty")])
def test_an_ignore_pattern_leaving_the_copy_is_refused_at_load(pattern: str, why: str) -> None:
    agent = {"name": "my-agent", "version": "1", "command": {"argv": ["my-agent"], "ignore": [".ok", pattern],
                                                             "install": {"manager": "lab"}}}
    [problem] = preset_problems(agent)
    assert problem.startswith(f"config: agent.command.ignore[1]: {pattern!r} {why}")
    assert "\n" not in problem


def test_agent_directories_live_in_the_run_root_and_are_reaped_with_it(tmp_path: Path) -> None:
    root = runs_dir(tmp_path) / "4194305-0123456789ab"  # a pid above pid_max: never alive
    root.mkdir()
    (root / LOCK_NAME).touch()
    ctx = SimpleNamespace(sandbox_in_force=lambda: SimpleNamespace(run_root=root))
    made = _make_run_dir(ctx)
    assert made.parent == root and made.name.startswith("agent-")  # beside the task copies
    (made / "home").mkdir()
    reaped = reap_stale(tmp_path)  # the lab was killed: the next command's reaper takes it all
    assert reaped.dirs == [str(root)] and not made.exists()


def test_a_deep_leftover_is_reaped_and_an_unremovable_one_is_reported_once(tmp_path: Path) -> None:
    with fast_dir(tmp_path / "fallback") as base:
        deep = runs_dir(base) / "4194305-00000000aaaa"
        (deep / "lab-copy").mkdir(parents=True)
        nest(deep / "lab-copy", 5_000)
        stuck_root = runs_dir(base) / "4194305-00000000bbbb"
        (stuck_root / "lab-copy").mkdir(parents=True)
        stuck = stuck_root / "lab-copy" / "stuck.txt"
        stuck.write_text("immutable\n")
        held = immutable(stuck)
        try:
            first = reap_stale(base)  # RecursionError out of every command before
            second = reap_stale(base)
        finally:
            release(stuck)
        assert str(deep) in first.dirs and not deep.exists()
        if not held:
            pytest.skip("chattr +i does not hold here (needs root and ext4/xfs/btrfs): the deep part passed")
        assert len(first.failed) == 1 and first.failed[0].startswith(f"{stuck_root} (Operation not permitted at ")
        assert "stuck.txt" in first.failed[0] and "could not remove" in first.line
        assert second.failed == [] and second.line == ""  # reported once, tried again silently
        third = reap_stale(base)  # the attribute is gone: removed, and dropped from the list
        assert third.dirs == [str(stuck_root)] and not (runs_dir(base) / ".unremovable").exists()


def test_a_missing_run_root_leaves_agent_directories_in_the_temp_dir(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    made = _make_run_dir(SimpleNamespace())
    assert made.parent == tmp_path and os.stat(made).st_mode & 0o777 == 0o711


_names = st.sampled_from(["a", "b", "logs", ".h", "x.md"])
_patterns = st.lists(st.lists(st.one_of(_names, st.sampled_from(["*", "**", "*.md", "?"])), min_size=1, max_size=3)
                     .map("/".join), min_size=1, max_size=3)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(patterns=_patterns, links=st.lists(st.lists(_names, min_size=1, max_size=2).map("/".join), max_size=3))
def test_no_ignore_pattern_reaches_through_a_planted_link(tmp_path_factory: pytest.TempPathFactory,
                                                         patterns: list[str], links: list[str]) -> None:
    """Ignore-symlink kind: whatever the patterns and wherever the agent plants links to a host
    directory, setting the ignored files aside removes only entries of the copy itself."""
    with fast_dir(tmp_path_factory.mktemp("ignore")) as base:
        host = base / "host"
        for name in ("a", "logs/x.md", "b/.h", "x.md"):
            (host / name).parent.mkdir(parents=True, exist_ok=True)
            (host / name).write_text("host\n")
        before = sorted(str(p.relative_to(host)) for p in host.rglob("*"))
        workspace = base / "ws"
        (workspace / "a").mkdir(parents=True)
        (workspace / "a" / "x.md").write_text("own\n")
        for link in links:
            where = workspace / link
            inside = [workspace.joinpath(*where.relative_to(workspace).parts[:i]) for i in range(1, len(link.split("/")))]
            if os.path.lexists(where) or any(p.is_symlink() or (p.exists() and not p.is_dir()) for p in inside):
                continue  # the test itself must never write through a link into the host directory
            where.parent.mkdir(parents=True, exist_ok=True)
            where.symlink_to(host)
        _set_aside(workspace, tuple(patterns), {})
        assert sorted(str(p.relative_to(host)) for p in host.rglob("*")) == before
        expected_gone = any(matches(p, "a", is_dir=True) or matches(p, "a/x.md", is_dir=False) for p in patterns)
        assert (workspace / "a" / "x.md").exists() is not expected_gone
