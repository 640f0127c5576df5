"""The scripted provider's files in a suite, checked when the suite loads (SPEC P2, S4).

A suite may carry answers for the scripted provider: ``scripts/<task id>.json``
for the built-in agent and ``scripts/agents/<agent>/<task id>.json`` for a
command agent. Every such file of a task of the suite is read and validated
at load time exactly as the provider will read it
(:func:`lab.providers.scripted.validate_script`), and its ``taskId`` must be
the task's id, so a broken script is a load error naming the file and the
field, not a run error found once per run. Whether a task *has* a script
matters only under ``provider=scripted``: an eval whose tasks lack one stops
before its first run with one line (:func:`missing_scripts`). Other files under ``scripts/`` are not read.
A script that is a link is read only when it resolves inside the suite
(:func:`~lab.suites.paths.link_problems` reports the others); special files
are never read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection

from lab.files import loads_json
from lab.suites.text import cut_line, decode_text, excerpt
from lab.suites.tree import FILE, LINK, SuiteTree, read_regular

SCRIPT_PATH = re.compile(r"scripts/(?:agents/[^/]+/)?(?P<task>[^/]+)\.json")
"""Where the scripted provider looks for a task's script, relative to the suite."""


def script_problems(tree: SuiteTree, task_ids: Collection[str]) -> list[tuple[str, str]]:
    """Problems of the scripts in ``tree`` that belong to a task in ``task_ids``.

    Returns:
        ``(task id, line)`` pairs in path order; each line starts with the
        script's path relative to the suite, e.g. ``scripts/t1.json: field
        "turns[0].content": expected a non-empty string, got 5``.
    """
    found = []
    for entry in tree.entries:
        match = SCRIPT_PATH.fullmatch(entry.rel) if entry.rel.startswith("scripts/") else None
        if match and match["task"] in task_ids and entry.kind in (FILE, LINK):
            found.append((entry.rel, entry.path, entry.kind, match["task"]))
    root = os.path.realpath(tree.root)
    problems = []
    for rel, path, kind, task_id in sorted(found):
        if kind == LINK:
            path = os.path.realpath(path)
            if not path.startswith(root + os.sep):
                continue  # an escaping link: reported by link_problems, never read
        problems += [(task_id, cut_line(line)) for line in _script_lines(rel, path, task_id)]
    return problems


def _script_lines(rel: str, path: str, task_id: str) -> list[str]:
    """As :func:`lab.providers.scripted.load_script` and the provider's set-up judge the file."""
    from lab.providers.scripted import validate_script

    try:
        text = decode_text(read_regular(path))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        return [f"{rel}: cannot read the scripted-provider script: {reason}"]
    try:
        script = loads_json(text)
    except json.JSONDecodeError as exc:
        return [f"{rel}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"]
    except RecursionError:
        return [f"{rel}: invalid JSON: nested too deeply"]
    lines = validate_script(script, source=rel)
    if not lines and script["taskId"] != task_id:
        lines = [f'{rel}: field "taskId": expected {task_id!r}, got {excerpt(script["taskId"])}']
    return lines


def missing_scripts(suite_dir: os.PathLike[str] | str, task_ids: Collection[str], agent: str | None = None) -> str | None:
    """One line naming the tasks without a scripted-provider script, or None when each has one.

    Args:
        suite_dir: the suite directory.
        task_ids: the tasks an eval will run.
        agent: a command agent's name (its scripts are ``scripts/agents/<agent>/``);
            None for the built-in agent (``scripts/``).
    """
    folder = os.path.join(suite_dir, "scripts", *(("agents", agent) if agent else ()))
    missing = [t for t in task_ids if not os.path.isfile(os.path.join(folder, f"{t}.json"))]
    if not missing:
        return None
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    who = f"agent {agent}" if agent else "the built-in agent"
    return (f"provider=scripted: no script for {who} for {len(missing)} of {len(task_ids)} task(s) ({shown}) "
            f"in {folder}; use a suite that carries them (e.g. suite=smoke-coding) or another provider")
