"""lab.execute.verifiers: every kind against a real workspace, real commands, real events."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from lab.execute.verifiers import VerifierResult, run_verifiers, score
from lab.sandbox.process import minimal_env
from lab.sandbox.workspace import snapshot

PY = sys.executable


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "calc.py").write_text("def total(n):\n    return sum(range(1, n + 1))\n")
    (ws / "data.txt").write_bytes(b"exact bytes\n")
    (ws / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "outside.txt").write_text("outside")
    return ws


def _run(spec: dict[str, Any], workspace: Path, *, events: list[dict[str, Any]] | None = None,
         baseline: dict[str, str] | None = None,
         cancel: threading.Event | None = None) -> VerifierResult:
    spec = {"id": "v", **spec}
    results = run_verifiers([spec], workspace=workspace,
                            baseline=snapshot(workspace) if baseline is None else baseline,
                            events=events, env=minimal_env(workspace), cancel=cancel)
    assert len(results) == 1
    return results[0]


# --- command (V1) ----------------------------------------------------------------

def test_command_passes_on_expected_exit_and_stdout(workspace: Path) -> None:
    result = _run({"kind": "command", "argv": [PY, "-c", "print('all OK')"],
                   "expectStdoutIncludes": "OK"}, workspace)
    assert result.status == "pass", result.detail
    assert result.diagnostics["exitCode"] == 0
    assert result.diagnostics["stdoutBytes"] == 7
    assert set(result.diagnostics) == {"exitCode", "stdoutBytes", "stderrBytes", "stderrTail",
                                       "timedOut", "durationMs"}


def test_command_runs_in_the_workspace_with_minimal_env(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    code = "import os; assert os.path.exists('calc.py'); assert 'OPENAI_API_KEY' not in os.environ"
    assert _run({"kind": "command", "argv": [PY, "-c", code]}, workspace).status == "pass"


def test_command_fails_on_other_exit_code(workspace: Path) -> None:
    result = _run({"kind": "command", "argv": [PY, "-c", "raise SystemExit(2)"]}, workspace)
    assert result.status == "fail"
    assert result.detail == "exit code 2, expected 0"


def test_command_expect_exit_nonzero(workspace: Path) -> None:
    result = _run({"kind": "command", "argv": [PY, "-c", "raise SystemExit(2)"],
                   "expectExit": 2}, workspace)
    assert result.status == "pass"


def test_command_fails_when_stdout_lacks_text(workspace: Path) -> None:
    result = _run({"kind": "command", "argv": [PY, "-c", "print('FAILED')"],
                   "expectStdoutIncludes": "OK"}, workspace)
    assert result.status == "fail" and "does not include 'OK'" in result.detail


def test_command_timeout_is_a_fail(workspace: Path) -> None:
    result = _run({"kind": "command", "argv": [PY, "-c", "import time; time.sleep(30)"],
                   "timeoutMs": 300}, workspace)
    assert result.status == "fail" and "timed out" in result.detail
    assert result.diagnostics["timedOut"] is True
    assert result.diagnostics["exitCode"] is None


def test_command_that_cannot_start_is_an_error(workspace: Path) -> None:
    result = _run({"kind": "command", "argv": ["no-such-program-xyz"]}, workspace)
    assert result.status == "error" and "no-such-program-xyz" in result.detail


def test_command_stderr_tail_is_last_2048_bytes_with_invalid_utf8_replaced(
        workspace: Path) -> None:
    code = "import sys; sys.stderr.buffer.write(b'a' * 5000 + b'\\xff\\xfe' + b'z' * 100)"
    result = _run({"kind": "command", "argv": [PY, "-c", code]}, workspace)
    tail = result.diagnostics["stderrTail"]
    assert result.diagnostics["stderrBytes"] == 5102
    assert tail == "a" * 1946 + "\ufffd\ufffd" + "z" * 100
    json.dumps(result.to_json())  # serialisable


@pytest.mark.parametrize("bad", [
    {"argv": []}, {"argv": "python3 -V"}, {"argv": ["x"], "timeoutMs": 600_001},
    {"argv": ["x"], "timeoutMs": 0}, {"argv": ["x"], "expectExit": True},
])
def test_command_invalid_spec_is_an_error(workspace: Path, bad: dict[str, Any]) -> None:
    result = _run({"kind": "command", **bad}, workspace)
    assert result.status == "error" and result.detail.startswith("invalid verifier")


def test_cancelled_command_is_an_error(workspace: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    result = _run({"kind": "command", "argv": [PY, "-c", "pass"]}, workspace, cancel=cancel)
    assert (result.status, result.detail) == ("error", "cancelled")


# --- files (V2–V4) -----------------------------------------------------------------

def test_file_equals(workspace: Path) -> None:
    good = hashlib.sha256(b"exact bytes\n").hexdigest()
    assert _run({"kind": "file-equals", "path": "data.txt", "sha256": good},
                workspace).status == "pass"
    bad = _run({"kind": "file-equals", "path": "data.txt", "sha256": "0" * 64}, workspace)
    assert bad.status == "fail" and bad.diagnostics["actualSha256"] == good


@pytest.mark.parametrize("kind, extra", [("file-equals", {"sha256": "0" * 64}),
                                         ("file-contains", {"text": "x"})])
def test_missing_file_is_a_fail(workspace: Path, kind: str, extra: dict[str, str]) -> None:
    result = _run({"kind": kind, "path": "nope.txt", **extra}, workspace)
    assert result.status == "fail" and "missing" in result.detail


def test_file_contains(workspace: Path) -> None:
    assert _run({"kind": "file-contains", "path": "calc.py", "text": "range(1, n + 1)"},
                workspace).status == "pass"
    assert _run({"kind": "file-contains", "path": "calc.py", "text": "range(n)"},
                workspace).status == "fail"


def test_file_absent(workspace: Path) -> None:
    assert _run({"kind": "file-absent", "path": "old.py"}, workspace).status == "pass"
    assert _run({"kind": "file-absent", "path": "calc.py"}, workspace).status == "fail"


def test_file_absent_counts_a_dangling_link_as_present(workspace: Path) -> None:
    os.symlink("missing-target", workspace / "old.py")
    assert _run({"kind": "file-absent", "path": "old.py"}, workspace).status == "fail"


@pytest.mark.parametrize("kind, extra", [("file-equals", {"sha256": "0" * 64}),
                                         ("file-contains", {"text": "outside"}),
                                         ("file-absent", {})])
@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd"])
def test_a_verifier_path_outside_the_workspace_is_an_error(workspace: Path, kind: str,
                                                           extra: dict[str, str], path: str) -> None:
    result = _run({"kind": kind, "path": path, **extra}, workspace)
    assert result.status == "error", result.detail
    assert "escapes" in result.detail or "absolute" in result.detail


def _plant(workspace: Path, what: str) -> None:
    """Replace calc.py (and pkg/) the way an agent's command could."""
    (workspace / "calc.py").unlink()
    if what == "symlink-out":
        os.symlink("/etc/passwd", workspace / "calc.py")
    elif what == "symlink-in":
        os.symlink("pkg/mod.py", workspace / "calc.py")
    elif what == "fifo":
        os.mkfifo(workspace / "calc.py")
    elif what == "directory":
        (workspace / "calc.py").mkdir()


@pytest.mark.parametrize("what", ["symlink-out", "symlink-in", "fifo", "directory"])
@pytest.mark.parametrize("kind, extra", [("file-equals", {"sha256": "0" * 64}),
                                         ("file-contains", {"text": "def"}),
                                         ("file-absent", {})])
def test_a_path_the_agent_replaced_by_a_link_fifo_or_directory_fails_the_check(
        workspace: Path, kind: str, extra: dict[str, str], what: str) -> None:
    _plant(workspace, what)
    result = _run({"kind": kind, "path": "calc.py", **extra}, workspace)
    assert result.status == "fail", result.detail
    if kind != "file-absent":
        assert {"symlink-out": "symbolic link", "symlink-in": "symbolic link", "fifo": "FIFO",
                "directory": "directory"}[what] in result.detail


def test_a_directory_on_the_way_turned_into_a_link_fails_the_check(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "mod.py").write_text("x = 1\n")
    shutil.rmtree(workspace / "pkg")
    os.symlink(outside, workspace / "pkg")
    result = _run({"kind": "file-contains", "path": "pkg/mod.py", "text": "x = 1"}, workspace)
    assert result.status == "fail", result.detail


# --- tree-diff-within (V5) -----------------------------------------------------------

def test_tree_diff_within_allowed_paths_passes(workspace: Path) -> None:
    baseline = snapshot(workspace)
    (workspace / "calc.py").write_text("changed\n")
    (workspace / "pkg" / "new.py").write_text("new\n")
    (workspace / "pkg" / "mod.py").unlink()
    result = _run({"kind": "tree-diff-within", "allowed": ["calc.py", "pkg/"]}, workspace,
                  baseline=baseline)
    assert result.status == "pass", result.detail
    assert result.diagnostics["offending"] == []


def test_tree_diff_ignores_git_and_pycache(workspace: Path) -> None:
    baseline = snapshot(workspace)
    for noise in (".git/index", "pkg/__pycache__/mod.pyc", "node_modules/a.js",
                  ".pytest_cache/v"):
        (workspace / noise).parent.mkdir(parents=True, exist_ok=True)
        (workspace / noise).write_text("noise")
    result = _run({"kind": "tree-diff-within", "allowed": []}, workspace, baseline=baseline)
    assert result.status == "pass", result.detail


def test_tree_diff_lists_offending_paths(workspace: Path) -> None:
    baseline = snapshot(workspace)
    (workspace / "data.txt").write_text("tampered")
    (workspace / "calc.py").unlink()
    (workspace / "pkgx.py").write_text("prefix of pkg/ but not inside it")
    for i in range(6):
        (workspace / f"extra{i}.txt").write_text("x")
    result = _run({"kind": "tree-diff-within", "allowed": ["pkg/"]}, workspace,
                  baseline=baseline)
    assert result.status == "fail"
    assert result.detail.startswith(
        "9 path(s) changed outside allowed: calc.py, data.txt, extra0.txt, extra1.txt, "
        "extra2.txt (+4 more)")
    assert "pkgx.py" in result.diagnostics["offending"]


def test_tree_diff_exact_name_does_not_allow_a_subtree(workspace: Path) -> None:
    baseline = snapshot(workspace)
    (workspace / "pkg" / "mod.py").write_text("changed")
    result = _run({"kind": "tree-diff-within", "allowed": ["pkg"]}, workspace,
                  baseline=baseline)
    assert result.status == "fail"


# --- tool-sequence (V6) ----------------------------------------------------------------

def _call(seq: int, tool: str, outcome: str = "ok", arguments: Any = None) -> dict[str, Any]:
    return {"seq": seq, "type": "tool_call", "turn": seq, "id": f"call_{seq}_0", "tool": tool,
            "arguments": arguments if arguments is not None else {"path": "calc.py"},
            "effect": "read", "outcome": outcome, "error": None if outcome == "ok" else "x"}


_MODEL_CALL = {"seq": 0, "type": "model_call", "purpose": "main", "turn": 0, "latencyMs": 1,
               "finishReason": "tool_calls", "toolCalls": 1, "usage": None}


@pytest.mark.parametrize("rule, events, status", [
    ({"rule": "before", "first": "read_file", "then": "edit_file"},
     [_MODEL_CALL, _call(1, "read_file"), _call(2, "edit_file")], "pass"),
    ({"rule": "before", "first": "read_file", "then": "edit_file"},
     [_call(1, "edit_file"), _call(2, "read_file"), _call(3, "edit_file")], "fail"),
    ({"rule": "before", "first": "read_file", "then": "edit_file"},
     [_call(1, "edit_file")], "fail"),
    ({"rule": "before", "first": "read_file", "then": "edit_file"}, [], "pass"),
    ({"rule": "never", "tool": "write_file"}, [_call(1, "read_file")], "pass"),
    ({"rule": "never", "tool": "write_file"}, [_call(1, "write_file", "denied")], "fail"),
    ({"rule": "max-calls", "tool": "run_command", "max": 2},
     [_call(1, "run_command"), _call(2, "run_command")], "pass"),
    ({"rule": "max-calls", "tool": "run_command", "max": 2},
     [_call(i, "run_command") for i in range(3)], "fail"),
    ({"rule": "no-repeat-failure", "tool": "edit_file"},
     [_call(1, "edit_file", "error", {"old": "a"}), _call(2, "edit_file", "ok", {"old": "b"}),
      _call(3, "edit_file", "ok", {"old": "b"})], "pass"),
    ({"rule": "no-repeat-failure", "tool": "edit_file"},
     [_call(1, "edit_file", "error", {"old": "a", "new": "b"}),
      _call(2, "read_file", "ok"), _call(3, "edit_file", "ok", {"new": "b", "old": "a"})],
     "fail"),
    ({"rule": "no-repeat-failure", "tool": "edit_file"},
     [_call(1, "edit_file", "denied", "{not json"), _call(2, "edit_file", "denied", "{not json")],
     "fail"),
])
def test_tool_sequence_rules(workspace: Path, rule: dict[str, Any],
                             events: list[dict[str, Any]], status: str) -> None:
    result = _run({"kind": "tool-sequence", **rule}, workspace, events=events)
    assert result.status == status, result.detail


def test_tool_sequence_without_events_is_an_error(workspace: Path) -> None:
    result = _run({"kind": "tool-sequence", "rule": "never", "tool": "x"}, workspace,
                  events=None)
    assert (result.status, result.detail) == ("error", "events missing")


def test_tool_sequence_unknown_rule_is_an_error(workspace: Path) -> None:
    result = _run({"kind": "tool-sequence", "rule": "after", "tool": "x"}, workspace, events=[])
    assert result.status == "error" and "unknown rule 'after'" in result.detail


# --- run_verifiers as a whole, and score (V7) --------------------------------------

def test_unknown_kind_is_an_error(workspace: Path) -> None:
    result = _run({"kind": "llm-judge"}, workspace)
    assert result.status == "error" and "llm-judge" in result.detail


def test_a_crashing_verifier_does_not_stop_the_others(workspace: Path) -> None:
    specs = [{"id": "broken", "kind": "tool-sequence", "rule": "never", "tool": "x"},
             {"id": "fine", "kind": "file-absent", "path": "old.py", "weight": 2}]
    results = run_verifiers(specs, workspace=workspace, baseline={}, events=[None],  # type: ignore[list-item]
                            env=minimal_env(workspace))
    assert [(r.id, r.status) for r in results] == [("broken", "error"), ("fine", "pass")]
    assert "verifier crashed: AttributeError" in results[0].detail
    assert results[1].to_json() == {"id": "fine", "kind": "file-absent", "status": "pass",
                                    "detail": "old.py is absent", "weight": 2.0,
                                    "diagnostics": {}}


def test_invalid_weight_is_an_error(workspace: Path) -> None:
    result = _run({"kind": "file-absent", "path": "x", "weight": -1}, workspace)
    assert result.status == "error" and "weight" in result.detail


def _result(status: str, weight: float) -> VerifierResult:
    return VerifierResult("v", "file-absent", status, "", weight)  # type: ignore[arg-type]


@pytest.mark.parametrize("results, expected", [
    ([], None),
    ([_result("pass", 0), _result("fail", 0)], None),
    ([_result("pass", 1), _result("fail", 1)], 0.5),
    ([_result("pass", 3), _result("error", 1)], 0.75),
    ([_result("pass", 0), _result("fail", 2)], 0.0),
    ([_result("pass", 1.5)], 1.0),
])
def test_score_is_the_weighted_share_of_passes(results: list[VerifierResult],
                                               expected: float | None) -> None:
    assert score(results) == expected
