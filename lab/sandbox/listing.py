"""Which entries of a fixture a run's copy holds: one rule for the copy and the suite digest (SPEC S5, X4).

A run works in a copy of its task's fixture (:func:`lab.sandbox.workspace.create_workspace`);
the suite digest (:func:`lab.suites.paths.suite_digest`) keys every run of the
suite. Both list a directory with :func:`copied`, so the digest covers exactly
what a copy can read: an entry the copy leaves out (bytecode caches, a
``.DS_Store``) is in neither, and every other entry — ``node_modules`` and a
fixture's own ``.git`` included — is in both. (The digest also leaves out a
``.git`` at the top of the suite directory, the repository the suite may be
kept in, which no fixture copy holds.)
"""

from __future__ import annotations

SKIPPED_NAMES = frozenset({"__pycache__", ".pytest_cache", ".DS_Store"})
"""Entry names (at any depth) left out of a run's copy and of the suite digest."""
SKIPPED_SUFFIXES = (".pyc", ".pyo")
"""Name endings left out of a run's copy and of the suite digest (Python rebuilds them from source)."""


def copied(name: str) -> bool:
    """Whether an entry named ``name`` is part of a run's copy of a fixture (and of the digest)."""
    return name not in SKIPPED_NAMES and not name.endswith(SKIPPED_SUFFIXES)


def skipped_in(_directory: str, names: list[str]) -> set[str]:
    """``shutil.copytree``'s ``ignore``: the names of one directory :func:`copied` leaves out."""
    return {name for name in names if not copied(name)}
