"""Load, validate and digest a suite (SPEC S1–S5).

A suite is a directory holding ``suite.json`` and one fixture directory per
task. Loading validates the file against ``lab/schemas/suite.schema.json``
and then applies semantic checks (unique ids, semver, safe paths, regexes).
Every problem is collected and reported at once, each line as
``suite <id>: task <task-id>: <field path>: <what is wrong>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lab.errors import SuiteError

IGNORED_NAMES = frozenset({"__pycache__", ".pytest_cache", ".git", ".DS_Store"})
TOOL_NAMES = frozenset({"list_dir", "read_file", "write_file", "edit_file", "search", "run_command"})


@dataclass(frozen=True)
class Task:
    """One task of a suite; ``fixture`` is an absolute path inside the suite."""

    id: str
    prompt: str
    fixture: Path
    budget: dict[str, int]
    policy: dict[str, Any]
    verifiers: tuple[dict[str, Any], ...]
    tags: tuple[str, ...] = ()
    agent: str | None = None
    fixture_git: bool = False
    replay_normalize: tuple[tuple[str, str], ...] = ()

    @property
    def effects(self) -> frozenset[str]:
        """Effects the task's policy asks for (``policy.allow``)."""
        return frozenset(self.policy.get("allow", []))


@dataclass(frozen=True)
class Suite:
    """A loaded suite.

    Attributes:
        id, version, description: from suite.json.
        path: the suite directory (absolute).
        tasks: in file order.
        digest: sha256 hex over every file of the suite (see :func:`suite_digest`).
    """

    id: str
    version: str
    description: str
    path: Path
    tasks: tuple[Task, ...]
    digest: str

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)


def resolve_suite(config: Any) -> Suite:
    """Load the suite an effective configuration names (``suite.path``).

    Raises:
        SuiteError: as :func:`load_suite`.
    """
    from lab.paths import from_root

    return load_suite(from_root(config.data["suite"]["path"]))


def load_suite(path: Path) -> Suite:
    """Load and validate the suite in directory ``path`` (or its suite.json).

    Raises:
        SuiteError: with every problem found (schema and semantic), before
            anything runs.
    """
    suite_dir = path.parent if path.name == "suite.json" else path
    suite_dir = suite_dir.absolute()
    file = suite_dir / "suite.json"
    label = f"suite {suite_dir.name}"
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError([f"{label}: {file}: no suite.json in this directory"]) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SuiteError([f"{label}: {file}: not readable JSON: {exc}"]) from None
    if isinstance(doc, dict) and isinstance(doc.get("suiteId"), str):
        label = f"suite {doc['suiteId']}"
    problems = _schema_problems(doc, label)
    if not problems:
        problems = _semantic_problems(doc, suite_dir, label)
    if problems:
        raise SuiteError([f"{file}: {len(problems)} problem(s)"] + problems)
    tasks = tuple(_task(t, suite_dir) for t in doc["tasks"])
    return Suite(id=doc["suiteId"], version=doc["suiteVersion"], description=doc["description"],
                 path=suite_dir, tasks=tasks, digest=suite_digest(suite_dir))


def _task(doc: dict[str, Any], suite_dir: Path) -> Task:
    return Task(
        id=doc["id"], prompt=doc["prompt"], fixture=suite_dir / doc["fixture"],
        budget=dict(doc["budget"]), policy=dict(doc["policy"]),
        verifiers=tuple(doc["verifiers"]), tags=tuple(doc.get("tags", [])),
        agent=doc.get("agent"), fixture_git=bool(doc.get("fixtureGit", False)),
        replay_normalize=tuple((r["pattern"], r["replace"]) for r in doc.get("replayNormalize", [])),
    )


def field_path(parts: Any) -> str:
    """``['tasks', 2, 'verifiers', 0, 'timeoutMs']`` → ``tasks[2].verifiers[0].timeoutMs``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def _where(doc: Any, label: str, parts: list[Any]) -> str:
    """``suite <id>: task <task-id>: <field path>`` for a JSON path into suite.json."""
    task = ""
    if len(parts) >= 2 and parts[0] == "tasks" and isinstance(parts[1], int):
        try:
            task_id = doc["tasks"][parts[1]].get("id")
        except (KeyError, IndexError, TypeError, AttributeError):
            task_id = None
        task = f"task {task_id if isinstance(task_id, str) else '#' + str(parts[1])}: "
    return f"{label}: {task}{field_path(parts)}"


def _schema_problems(doc: Any, label: str) -> list[str]:
    import jsonschema

    from lab.schemas import load_schema

    validator = jsonschema.Draft202012Validator(load_schema("suite"))
    problems = []
    for err in validator.iter_errors(doc):
        # if/then errors repeat for each branch; report the leaf, once
        problems.append(f"{_where(doc, label, list(err.absolute_path))}: {err.message}")
    return sorted(set(problems), key=problems.index)


def _semantic_problems(doc: dict[str, Any], suite_dir: Path, label: str) -> list[str]:
    import semver

    problems: list[str] = []

    def add(parts: list[Any], message: str) -> None:
        problems.append(f"{_where(doc, label, parts)}: {message}")

    if not semver.Version.is_valid(doc["suiteVersion"]):
        add(["suiteVersion"], f"{doc['suiteVersion']!r} is not a semantic version (e.g. 1.0.0)")
    seen: set[str] = set()
    for i, task in enumerate(doc["tasks"]):
        if task["id"] in seen:
            add(["tasks", i, "id"], f"duplicate task id {task['id']!r}")
        seen.add(task["id"])
        fixture_problem = unsafe_path(task["fixture"]) or _fixture_problem(suite_dir, task["fixture"])
        if fixture_problem:
            add(["tasks", i, "fixture"], fixture_problem)
        problems.extend(_verifier_problems(doc, label, i, task))
        for j, rule in enumerate(task.get("replayNormalize", [])):
            try:
                re.compile(rule["pattern"])
            except re.error as exc:
                add(["tasks", i, "replayNormalize", j, "pattern"], f"invalid regular expression: {exc}")
    for link in _escaping_symlinks(suite_dir):
        problems.append(f"{label}: {link}: symlink resolves outside the suite directory")
    return problems


def _verifier_problems(doc: dict[str, Any], label: str, i: int, task: dict[str, Any]) -> list[str]:
    problems = []
    ids: set[str] = set()
    for j, verifier in enumerate(task["verifiers"]):
        base = ["tasks", i, "verifiers", j]
        if verifier["id"] in ids:
            problems.append(f"{_where(doc, label, base + ['id'])}: duplicate verifier id {verifier['id']!r}")
        ids.add(verifier["id"])
        paths = [(["path"], verifier["path"])] if "path" in verifier else []
        paths += [(["allowed", n], p) for n, p in enumerate(verifier.get("allowed", []))]
        for sub, rel in paths:
            problem = unsafe_path(rel.rstrip("/") or rel)
            if problem:
                problems.append(f"{_where(doc, label, base + sub)}: {problem}")
        for key in ("first", "then", "tool"):
            if key in verifier and verifier[key] not in TOOL_NAMES:
                problems.append(f"{_where(doc, label, base + [key])}: unknown tool {verifier[key]!r} "
                                f"(known: {', '.join(sorted(TOOL_NAMES))})")
    return problems


def unsafe_path(rel: str) -> str | None:
    """Why ``rel`` is not a safe relative path, or None when it is (SPEC S3).

    Rejects NUL bytes, ``~``, POSIX and Windows absolute forms (``/x``,
    ``C:\\x``, ``\\\\server\\share``), backslashes and ``..`` segments.
    """
    if "\x00" in rel:
        return "path contains a NUL byte"
    if rel.startswith("~"):
        return f"path {rel!r} starts with '~'; use a path relative to the suite"
    if PurePosixPath(rel).is_absolute() or PureWindowsPath(rel).is_absolute() or PureWindowsPath(rel).drive:
        return f"path {rel!r} is absolute; use a relative path"
    if "\\" in rel:
        return f"path {rel!r} contains a backslash; use '/' separators"
    if ".." in PurePosixPath(rel).parts:
        return f"path {rel!r} contains '..'; it must stay inside"
    return None


def _fixture_problem(suite_dir: Path, rel: str) -> str | None:
    target = (suite_dir / rel).resolve()
    if not target.is_relative_to(suite_dir.resolve()):
        return f"fixture {rel!r} resolves outside the suite directory"
    if not target.is_dir():
        return f"fixture directory {rel!r} does not exist"
    return None


def _escaping_symlinks(suite_dir: Path) -> list[str]:
    root = suite_dir.resolve()
    found = []
    for dirpath, dirnames, filenames in os.walk(suite_dir):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink() and not p.resolve().is_relative_to(root):
                found.append(p.relative_to(suite_dir).as_posix())
    return sorted(found)


def suite_digest(suite_dir: Path) -> str:
    """sha256 hex over every file of the suite: sorted relative path and bytes.

    Ignores ``__pycache__``, ``.pytest_cache``, ``.git`` and ``*.pyc``.
    Symlinks contribute their target text, not the file they point to.
    """
    digest = hashlib.sha256()
    entries = []
    for dirpath, dirnames, filenames in os.walk(suite_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        for name in filenames:
            if name in IGNORED_NAMES or name.endswith(".pyc"):
                continue
            entries.append(Path(dirpath) / name)
    for p in sorted(entries, key=lambda e: e.relative_to(suite_dir).as_posix()):
        rel = p.relative_to(suite_dir).as_posix()
        data = ("symlink:" + os.readlink(p)).encode() if p.is_symlink() else p.read_bytes()
        digest.update(rel.encode("utf-8") + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()
