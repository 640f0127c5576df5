"""Apply a scripted-provider solution to a fixture copy and judge it, without the lab's agent.

A small, independent reading of the contracts (tests/test_bundled_suites_content.py has its
own for the older suites): ``@sha256:<path>`` arguments resolve to the hash most recently
reported for <path> before the turn runs; an ``edit_file`` naming a stale hash is refused;
``read_file`` with an offset past the end, a ``search`` that matches nothing and a command
that exits non-zero are recorded as failed calls, so a test can insist a solution has none.
Commands run without a shell in the workspace with a minimal environment, like the harness.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IGNORED_PARTS = frozenset({".git", "node_modules", "__pycache__", ".pytest_cache"})
SHA_REF = "@sha256:"


@dataclass(frozen=True)
class ToolEvent:
    """One executed tool call: name, resolved arguments, "ok" or "error"."""

    tool: str
    arguments: dict[str, Any]
    outcome: str


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_fixture(fixture: Path, dest: Path) -> Path:
    """A fresh copy of ``fixture`` at ``dest/workspace``; returns its path."""
    workspace = dest / "workspace"
    shutil.copytree(fixture, workspace, ignore=shutil.ignore_patterns(*IGNORED_PARTS))
    return workspace


def snapshot(root: Path) -> dict[str, str]:
    """Relative POSIX path -> sha256 of every file under ``root`` (ignored parts skipped)."""
    return {p.relative_to(root).as_posix(): file_sha(p) for p in root.rglob("*")
            if p.is_file() and not IGNORED_PARTS.intersection(p.relative_to(root).parts)}


def run_argv(workspace: Path, argv: list[str], timeout_ms: int) -> subprocess.CompletedProcess[str]:
    """Run a command verifier's ``argv`` in ``workspace`` with the ``PATH`` the bwrap sandbox gives it.

    The sandbox's ``PATH`` (``/usr/local/bin:/usr/bin:/bin``) finds the distribution's ``python3`` as a
    verifier does in a run, not a version manager's shim (pyenv's is a shell script costing 0.2 s a call).
    """
    from lab.sandbox.bwrap import SANDBOX_PATH

    env = {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": str(workspace), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=timeout_ms / 1000, check=False)


def resolve(value: Any, reported: dict[str, str]) -> Any:
    """Replace "@sha256:<path>" strings by the last hash reported for <path>, if any."""
    if isinstance(value, str) and value.startswith(SHA_REF):
        return reported.get(value[len(SHA_REF):], value)
    if isinstance(value, dict):
        return {key: resolve(item, reported) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, reported) for item in value]
    return value


def _search_hits(workspace: Path, args: dict[str, Any]) -> int:
    regex = re.compile(args["pattern"])
    base = workspace / args.get("path", ".")
    files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
    return sum(1 for path in files
               for line in path.read_text("utf-8", errors="replace").splitlines() if regex.search(line))


def _execute(workspace: Path, name: str, args: dict[str, Any], reported: dict[str, str]) -> str:
    path = workspace / args.get("path", ".")
    if not path.resolve().is_relative_to(workspace.resolve()):
        raise AssertionError(f"{name} leaves the workspace: {args}")
    if name == "read_file":
        if not path.is_file():
            return "error"
        lines = len(path.read_text("utf-8", errors="replace").splitlines())
        reported[args["path"]] = file_sha(path)
        return "ok" if args.get("offset", 1) <= max(lines, 1) else "error"
    if name == "list_dir":
        return "ok" if path.is_dir() else "error"
    if name == "search":
        return "ok" if _search_hits(workspace, args) else "error"
    if name == "write_file":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(args["content"].encode("utf-8"))
        reported[args["path"]] = file_sha(path)
        return "ok"
    if name == "edit_file":
        text = path.read_text("utf-8") if path.is_file() else ""
        if args["sha256"] != file_sha(path) or text.count(args["old"]) != 1:
            return "error"
        path.write_bytes(text.replace(args["old"], args["new"]).encode("utf-8"))
        reported[args["path"]] = file_sha(path)
        return "ok"
    if name == "run_command":
        proc = run_argv(workspace, args["argv"], args.get("timeoutMs", 60000))
        return "ok" if proc.returncode == 0 else "error"
    raise AssertionError(f"unknown tool {name!r}")


def apply_script(workspace: Path, script: dict[str, Any]) -> list[ToolEvent]:
    """Run every tool call of ``script`` against ``workspace``; the events in order."""
    reported: dict[str, str] = {}
    events: list[ToolEvent] = []
    for turn in script["turns"]:
        # The provider substitutes hashes when it answers, i.e. from results before this turn.
        calls = [(call["name"], resolve(call["arguments"], reported))
                 for call in turn.get("toolCalls", [])]
        for name, args in calls:
            events.append(ToolEvent(name, args, _execute(workspace, name, args, reported)))
    return events


def _within(path: str, allowed: list[str]) -> bool:
    return any(path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in allowed)


def verdicts(workspace: Path, verifiers: list[dict[str, Any]], before: dict[str, str]) -> dict[str, bool]:
    """Verifier id -> passes, for the kinds that do not read the event log.

    Raises:
        AssertionError: a verifier of a kind this helper does not judge.
    """
    out: dict[str, bool] = {}
    for verifier in verifiers:
        kind, target = verifier["kind"], workspace / verifier.get("path", ".")
        if kind == "command":
            proc = run_argv(workspace, verifier["argv"], verifier.get("timeoutMs", 60000))
            out[verifier["id"]] = (proc.returncode == verifier.get("expectExit", 0)
                                   and verifier.get("expectStdoutIncludes", "") in proc.stdout)
        elif kind == "file-contains":
            out[verifier["id"]] = target.is_file() and verifier["text"] in target.read_text("utf-8")
        elif kind == "file-equals":
            out[verifier["id"]] = target.is_file() and file_sha(target) == verifier["sha256"]
        elif kind == "file-absent":
            out[verifier["id"]] = not target.exists()
        elif kind != "tree-diff-within":
            raise AssertionError(f"verifier kind {kind!r} is not judged here")
    after = snapshot(workspace)  # judged after the commands: a command must not widen the diff
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    for verifier in verifiers:
        if verifier["kind"] == "tree-diff-within":
            out[verifier["id"]] = all(_within(p, verifier["allowed"]) for p in changed)
    return out
