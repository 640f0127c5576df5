"""Load, validate and digest a suite (SPEC S1–S5).

A suite is a directory holding ``suite.json`` and one fixture directory per
task. Loading validates the file against ``lab/schemas/suite.schema.json``
and applies semantic checks (semver, unique ids, safe paths, links, regexes,
tool names, the tasks' scripted-provider scripts). Schema and semantic
problems are collected together and reported at once, each line as
``suite <id>: task <task-id>: <field path>: <what is wrong>``; nothing but a
:class:`~lab.errors.SuiteError` escapes for a malformed suite.

The format is documented for users in ``docs/suite-format.md``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import patterns
from lab.errors import SuiteError
from lab.files import loads_json
from lab.suites.paths import IGNORED_NAMES, fixture_problem, link_problems, suite_digest, unsafe_path
from lab.suites.scripts import script_problems
from lab.suites.text import decode_text, excerpt, may_hold_surrogates, name_in_line, read_number, surrogate_problems
from lab.suites.tree import SpecialFileError, SuiteTree, read_regular, walk_suite

__all__ = ["IGNORED_NAMES", "TOOL_NAMES", "Suite", "Task", "field_path", "load_suite",
           "suite_digest", "unsafe_path"]

TOOL_NAMES = frozenset({"list_dir", "read_file", "write_file", "edit_file", "search", "run_command"})
# Keys each tool-sequence rule reads; any other rule key is a mistake.
RULE_KEYS = {"before": {"first", "then"}, "never": {"tool"}, "max-calls": {"tool", "max"},
             "no-repeat-failure": {"tool"}}
Problem = tuple[list[Any], str]
FixtureCheck = Callable[[str], "str | None"]


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
    expected_outcome: str = "success"  # "success" | "refusal" (suite.json expectedOutcome)

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


def load_suite(path: Path) -> Suite:
    """Load and validate the suite in directory ``path`` (or its suite.json).

    ``suite.json`` must be a regular file (not a link, FIFO or device). The
    suite directory is listed once (:func:`~lab.suites.tree.walk_suite`); that
    listing serves the fixture, link, special-file and script checks and the
    digest. Linear in the size of the suite.

    Raises:
        SuiteError: with every problem found (schema and semantic), before
            anything runs. ``problems[0]`` names the file and the count.
    """
    suite_dir = path.parent if path.name == "suite.json" else path
    suite_dir = suite_dir.absolute()
    file = suite_dir / "suite.json"
    with _collector_paused():
        doc, escapes_surrogate = _read(file, f"suite {suite_dir.name}")
        label = f"suite {name_in_line(doc['suiteId'])}" if isinstance(doc, dict) and isinstance(doc.get("suiteId"), str) \
            else f"suite {name_in_line(suite_dir.name)}"
        tree = walk_suite(suite_dir)
        # One check per distinct fixture path, shared by the task and file checks (linear in tasks);
        # a directory the listing reached without a link needs no further system call.
        fixture_check: FixtureCheck = functools.cache(
            lambda rel: unsafe_path(rel) or (None if tree.has_plain_dir(rel) else fixture_problem(suite_dir, rel)))
        problems = [f"{_where(doc, label, parts)}: {msg}" for parts, msg in _collect(doc, fixture_check, escapes_surrogate)]
        problems += [f"{label}: {line}" for line in _file_problems(doc, tree, fixture_check)]
        problems += [f"{label}: {line}" for line in _script_file_problems(doc, tree)]
        problems = list(dict.fromkeys(problems))  # if/then branches can repeat a message
        if problems:
            raise SuiteError([f"{file}: {len(problems)} problem(s)"] + problems)
        tasks = tuple(_task(t, suite_dir) for t in doc["tasks"])
        return Suite(id=doc["suiteId"], version=doc["suiteVersion"], description=doc["description"],
                     path=suite_dir, tasks=tasks, digest=suite_digest(suite_dir, tree))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a suite loads: every object the loader builds
    (the parsed document, the listing) lives on, so collections during the load find nothing
    and, on a large suite, cost about as much as the parse itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read(file: Path, label: str) -> tuple[Any, bool]:
    """The parsed suite.json, and whether its text escapes a surrogate (see :func:`may_hold_surrogates`)."""
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        raw = read_regular(file)
    except FileNotFoundError:
        raise SuiteError([f"{label}: {file}: no suite.json in this directory"]) from None
    except SpecialFileError:
        raise SuiteError([f"{label}: {file}: not a regular file (FIFO, socket or device); "
                          f"suite.json must be a regular file"]) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(file):
            raise SuiteError([f"{label}: {file}: is a symbolic link; suite.json must be a regular file "
                              f"in the suite directory, not a link"]) from None
        raise SuiteError([f"{label}: {file}: cannot be read: {exc.strerror}"]) from None
    try:
        doc = loads_json(decode_text(raw), parse_float=read_number, parse_constant=no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise SuiteError([f"{label}: {file}: not readable JSON: {exc}"]) from None
    return doc, may_hold_surrogates(raw)


def _task(doc: dict[str, Any], suite_dir: Path) -> Task:
    return Task(
        id=doc["id"], prompt=doc["prompt"], fixture=suite_dir / doc["fixture"],
        budget=dict(doc["budget"]), policy=dict(doc["policy"]),
        verifiers=tuple(doc["verifiers"]), tags=tuple(doc.get("tags", [])),
        agent=doc.get("agent"), fixture_git=bool(doc.get("fixtureGit", False)),
        replay_normalize=tuple((r["pattern"], r["replace"]) for r in doc.get("replayNormalize", [])),
        expected_outcome=str(doc.get("expectedOutcome", "success")),
    )


def field_path(parts: Any) -> str:
    """``['tasks', 2, 'verifiers', 0, 'timeoutMs']`` → ``tasks[2].verifiers[0].timeoutMs``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def _task_label(doc: Any, index: int) -> str:
    try:
        task_id = doc["tasks"][index].get("id")
    except (KeyError, IndexError, TypeError, AttributeError):
        task_id = None
    return f"task {name_in_line(task_id) if isinstance(task_id, str) else '#' + str(index)}"


def _where(doc: Any, label: str, parts: list[Any]) -> str:
    """``suite <id>: task <task-id>: <field path>`` for a JSON path into suite.json."""
    task = ""
    if len(parts) >= 2 and parts[0] == "tasks" and isinstance(parts[1], int):
        task = _task_label(doc, parts[1]) + ": "
    return f"{label}: {task}{field_path(parts)}"


def _sort_key(problem: Problem) -> tuple[Any, ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in problem[0])


def _collect(doc: Any, fixture_check: FixtureCheck, escapes_surrogate: bool) -> list[Problem]:
    """Schema, text and semantic problems together, ordered by field path."""
    from lab.suites.validate import schema_problems

    problems = schema_problems(doc) + _semantic_problems(doc, fixture_check)
    if escapes_surrogate:
        problems += surrogate_problems(doc)
    return sorted(problems, key=_sort_key)


def _semantic_problems(doc: Any, fixture_check: FixtureCheck) -> list[Problem]:
    """Checks the JSON Schema cannot express; each tolerates ill-typed input
    (the schema reports that) so that every problem is found in one pass."""
    import semver

    if not isinstance(doc, dict):
        return []
    problems: list[Problem] = []
    version = doc.get("suiteVersion")
    if isinstance(version, str) and version and not semver.Version.is_valid(version):
        problems.append((["suiteVersion"], f"{excerpt(version)} is not a semantic version (e.g. 1.0.0)"))
    raw_tasks = doc.get("tasks")
    tasks: list[Any] = raw_tasks if isinstance(raw_tasks, list) else []
    first_index: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            continue
        task_id = task.get("id")
        if isinstance(task_id, str):
            if task_id in first_index:
                problems.append((["tasks", i, "id"], f"duplicate task id {excerpt(task_id)} "
                                                     f"(also tasks[{first_index[task_id]}])"))
            first_index.setdefault(task_id, i)
        problems += [(["tasks", i, *sub], msg) for sub, msg in _task_problems(task, fixture_check)]
    return problems


def _task_problems(task: dict[str, Any], fixture_check: FixtureCheck) -> list[Problem]:
    problems: list[Problem] = []
    fixture = task.get("fixture")
    if isinstance(fixture, str) and fixture:
        problem = fixture_check(fixture)
        if problem:
            problems.append((["fixture"], problem))
    policy = task.get("policy")
    if isinstance(policy, dict) and policy.get("readOnly") is True \
            and isinstance(policy.get("allow"), list) and "write" in policy["allow"]:
        problems.append((["policy", "readOnly"], "true contradicts policy.allow, which grants 'write'"))
    agent = task.get("agent")
    if isinstance(agent, str) and agent:
        profiles = _agent_profiles()
        if agent not in profiles:
            problems.append((["agent"], f"no agent profile {excerpt(agent)} (available: {', '.join(profiles)})"))
    verifiers = task.get("verifiers")
    for j, verifier in enumerate(verifiers if isinstance(verifiers, list) else []):
        if isinstance(verifier, dict):
            problems += [(["verifiers", j, *sub], msg) for sub, msg in _verifier_problems(verifier)]
    ids = [v.get("id") for v in verifiers if isinstance(v, dict)] if isinstance(verifiers, list) else []
    first: dict[str, int] = {}
    for j, verifier_id in enumerate(ids):
        if isinstance(verifier_id, str):
            if verifier_id in first:
                problems.append((["verifiers", j, "id"], f"duplicate verifier id {excerpt(verifier_id)} "
                                                         f"(also verifiers[{first[verifier_id]}])"))
            first.setdefault(verifier_id, j)
    rules = task.get("replayNormalize")
    for j, rule in enumerate(rules if isinstance(rules, list) else []):
        pattern = rule.get("pattern") if isinstance(rule, dict) else None
        if isinstance(pattern, str):
            try:
                patterns.compile_pattern(pattern)
            except ValueError as exc:
                problems.append((["replayNormalize", j, "pattern"], f"invalid regular expression: {exc}"))
    return problems


@functools.cache
def _agent_profiles() -> tuple[str, ...]:
    from lab.paths import CONF_DIR

    return tuple(sorted(p.stem for p in (CONF_DIR / "agent").glob("*.yaml")))


def _verifier_problems(verifier: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    paths: list[tuple[list[Any], Any]] = [(["path"], verifier["path"])] if "path" in verifier else []
    if isinstance(verifier.get("allowed"), list):
        paths += [(["allowed", n], p) for n, p in enumerate(verifier["allowed"])]
    for sub, rel in paths:
        if isinstance(rel, str) and rel:
            # "dir/" in tree-diff-within allows a subtree; the slash is not part of the path.
            problem = unsafe_path(rel[:-1] if sub[0] == "allowed" and rel.endswith("/") and rel != "/"
                                  else rel)
            if problem:
                problems.append((sub, problem))
    pattern = verifier.get("pattern")
    if verifier.get("kind") == "answer-matches" and isinstance(pattern, str) and pattern:
        try:
            patterns.compile_pattern(pattern)
        except ValueError as exc:
            problems.append((["pattern"], f"invalid regular expression: {exc}"))
    if verifier.get("kind") == "tool-sequence":
        for key in ("first", "then", "tool"):
            value = verifier.get(key)
            if isinstance(value, str) and value and value not in TOOL_NAMES:
                problems.append(([key], f"unknown tool {excerpt(value)} (known: {', '.join(sorted(TOOL_NAMES))})"))
        rule = verifier.get("rule")
        if isinstance(rule, str) and rule in RULE_KEYS:
            for key in sorted(set(verifier) & {"first", "then", "tool", "max"} - RULE_KEYS[rule]):
                problems.append(([key], f"not used by rule {rule!r} (it reads "
                                        f"{', '.join(sorted(RULE_KEYS[rule]))})"))
    return problems


def _script_file_problems(doc: Any, tree: SuiteTree) -> list[str]:
    """Problems of the scripted provider's files of the suite's tasks, each under its task."""
    raw_tasks = doc.get("tasks") if isinstance(doc, dict) else None
    first_index: dict[str, int] = {}
    for i, task in enumerate(raw_tasks if isinstance(raw_tasks, list) else []):
        task_id = task.get("id") if isinstance(task, dict) else None
        if isinstance(task_id, str):
            first_index.setdefault(task_id, i)
    return [f"{_task_label(doc, first_index[task_id])}: {line}" for task_id, line in script_problems(tree, first_index)]


def _file_problems(doc: Any, tree: SuiteTree, fixture_check: FixtureCheck) -> list[str]:
    """Links and special files, attributed to the first task using the fixture they break."""
    raw_tasks = doc.get("tasks") if isinstance(doc, dict) else None
    tasks: list[Any] = raw_tasks if isinstance(raw_tasks, list) else []
    users: dict[str, int] = {}
    for i, task in enumerate(tasks):
        fixture = task.get("fixture") if isinstance(task, dict) else None
        if isinstance(fixture, str) and fixture and fixture not in users and not fixture_check(fixture):
            users[fixture] = i
    lines = []
    for owner, message in link_problems(tree, users):
        if owner is None:
            lines.append(message)
        else:
            index = users[owner]
            lines.append(f"{_task_label(doc, index)}: tasks[{index}].fixture: {message}")
    return lines
