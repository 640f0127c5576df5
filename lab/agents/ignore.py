"""A command agent's ``ignore`` patterns: checked at load, matched inside the task copy without following links.

A preset's ``command.ignore`` names files the agent writes into the task copy
(its history, logs) that the lab removes before the verifiers look::

    ignore: [.my-agent-history, ".my-agent/*.md", "logs/**"]

A pattern is a ``/``-separated path relative to the task copy; in each part
``*``, ``?`` and ``[...]`` match as in :mod:`fnmatch` (a leading dot needs no
special care), and a part ``**`` matches any number of directories (none
included); a trailing ``/`` matches directories only. A pattern that would
name something outside the copy (absolute, ``~``, a ``..`` part, a NUL) is
refused when the preset is loaded (:func:`ignore_problems`).

Matching (:func:`ignored_entries`) walks the copy with
:func:`lab.sandbox.walk.walk`: iteratively, within its bounds, and never into a
symbolic link, so ``.my-agent/*.md`` cannot reach host files through a link
the agent planted at ``.my-agent``; the link itself matches ``.my-agent`` only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from lab.sandbox.walk import DIR, TreeBoundError, remove_inside, walk

_ANY = "**"


def ignore_problems(patterns: Sequence[object], where: str = "agent.command.ignore") -> list[str]:
    """One line per pattern that is not a relative path inside the task copy.

    Args:
        patterns: the preset's ``ignore`` list.
        where: the config key, for the messages.

    Returns:
        ``config: <where>[i]: …`` lines; empty when every pattern is fine.
    """
    problems = []
    for i, pattern in enumerate(patterns):
        why = _why_refused(pattern)
        if why:
            problems.append(f"config: {where}[{i}]: {pattern!r} {why}; give a path relative to the task copy "
                            "(e.g. .my-agent/history.md)")
    return problems


def _why_refused(pattern: object) -> str:
    if not isinstance(pattern, str) or not pattern.strip("/"):
        return "is empty"
    if "\x00" in pattern:
        return "contains a NUL byte"
    if pattern.startswith(("/", "\\")) or (len(pattern) > 1 and pattern[1] == ":"):
        return "is absolute: it would leave the task copy"
    if pattern.startswith("~"):
        return "starts with '~': it would leave the task copy"
    if ".." in pattern.replace("\\", "/").split("/"):
        return "has a '..' part: it would leave the task copy"
    return ""


def _parts(pattern: str) -> tuple[list[str], bool]:
    """The pattern's parts (``.`` and empty parts dropped) and whether it names directories only."""
    return [p for p in pattern.split("/") if p not in ("", ".")], pattern.endswith("/")


def _advance(parts: list[str], states: set[int], name: str) -> set[int]:
    """Pattern positions reachable after matching one more path part ``name`` (an NFA step)."""
    after = set()
    for i in states:
        if i < len(parts):
            if parts[i] == _ANY:
                after.add(i)  # ** takes this part and may take more
            elif fnmatchcase(name, parts[i]):
                after.add(i + 1)
    return _closure(parts, after)


def _closure(parts: list[str], states: set[int]) -> set[int]:
    out = set(states)
    for i in sorted(states):
        while i < len(parts) and parts[i] == _ANY:  # ** may also match no part
            i += 1
            out.add(i)
    return out


def matches(pattern: str, rel: str, *, is_dir: bool) -> bool:
    """Whether the relative path ``rel`` (``/``-separated) is named by ``pattern``."""
    parts, dirs_only = _parts(pattern)
    states = _closure(parts, {0})
    for name in rel.split("/"):
        states = _advance(parts, states, name)
    return len(parts) in states and (is_dir or not dirs_only)


def _may_reach_below(pattern: str, rel: str) -> bool:
    parts, _ = _parts(pattern)
    states = _closure(parts, {0})
    for name in rel.split("/"):
        states = _advance(parts, states, name)
        if not states:
            return False
    return any(i < len(parts) for i in states)


def ignored_entries(root: Path, patterns: Sequence[str]) -> list[str]:
    """The relative paths under ``root`` that ``patterns`` name, outermost only, in walk order.

    A matched directory stands for everything below it (it is not entered).
    Directories no pattern can reach below are not entered either, so a
    pattern without ``**`` walks only as deep as it has parts.

    Raises:
        TreeBoundError: the walk passes its bounds (:mod:`lab.sandbox.walk`).
        OSError: the copy cannot be listed.
    """
    root_path = os.fspath(root)
    found: list[str] = []

    def named(rel: str, is_dir: bool) -> bool:
        return any(matches(p, rel, is_dir=is_dir) for p in patterns)

    def descend(rel: str) -> bool:
        return not named(rel, True) and any(_may_reach_below(p, rel) for p in patterns)

    for entry in walk(root_path, descend=descend):
        if named(entry.rel, entry.kind == DIR):
            found.append(entry.rel)
    return found


def set_aside(root: Path, patterns: Sequence[str]) -> list[str]:
    """Remove what ``patterns`` name in the task copy ``root``; one warning line per thing not done.

    Each match of :func:`ignored_entries` is removed through directory
    descriptors opened without following links
    (:func:`lab.sandbox.walk.remove_inside`): a link the agent planted is
    removed as a link at most, what it points to is never touched. A copy
    past the walk's bounds is left as it is (one warning): the verifiers judge
    it, and a tree-diff verifier fails on the same bound.

    Returns:
        Warning lines for the run record (empty when everything was removed).
    """
    if not patterns:
        return []
    try:
        matched = ignored_entries(root, patterns)
    except (TreeBoundError, OSError) as exc:
        return [f"agent.command.ignore not applied: {exc}"]
    warnings = []
    for rel in matched:
        try:
            remove_inside(root, rel)
        except OSError as exc:
            warnings.append(f"agent.command.ignore: cannot remove {rel}: {exc.strerror or exc}")
    return warnings
