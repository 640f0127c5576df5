"""`lab list [suite_dir=DIR] [cassette_dir=DIR]`: the suites the lab can run.

One row per suite: id, version, short digest, task count, cassettes recorded
(``n/N`` or ``none``) and where it comes from (``bundled`` under the
checkout's ``suites/``, or ``suite_dir``). A suite that does not load is
listed as ``invalid`` with its first problem. Listing runs no suite code, so
third-party suites need no confirmation here. Like ``lab run``, it takes the
configuration and the suites an earlier command composed and loaded when none
of their inputs changed (:mod:`lab.config.cache`, :mod:`lab.suites.cache`).
"""

from __future__ import annotations

import sys
from pathlib import Path


def list_suites(overrides: list[str]) -> int:
    """Print the suites table; returns 0, or 1 on a usage error (bad override, bad suite_dir)."""
    from tabulate import tabulate

    from lab import paths
    from lab.config.cache import compose_cached
    from lab.errors import ConfigError
    from lab.suites.source import cassette_root, listed_suite_dirs

    bad = [o for o in overrides if "=" not in o or o.startswith("-")]
    if bad:
        print(f"lab list: expected key=value overrides, got {' '.join(bad)!r}", file=sys.stderr)
        return 1
    try:
        config = compose_cached(overrides)
        found = listed_suite_dirs(config.data["suite_dir"])
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if not any(source == "bundled" for source, _ in found):
        print(f"no bundled suites: {paths.SUITES_DIR} holds no <suite>/suite.json")
    if not found:
        return 0
    rows = [_row(source, suite_dir, cassette_root(suite_dir, config.data["cassette_dir"]))
            for source, suite_dir in found]
    print(tabulate(rows, headers=["suite", "version", "digest", "tasks", "cassettes", "source"],
                   tablefmt="simple"))
    return 0


def _row(source: str, suite_dir: Path, cassettes: Path) -> tuple[object, ...]:
    from lab.errors import SuiteError
    from lab.suites.cache import load_suite_cached

    try:
        suite = load_suite_cached(suite_dir)
    except SuiteError as exc:
        first = exc.problems[1] if len(exc.problems) > 1 else exc.problems[0]
        return (suite_dir.name, "invalid", "", "", first, source)
    recorded = sum(1 for t in suite.tasks if (cassettes / suite.id / f"{t.id}.jsonl").exists())
    return (suite.id, suite.version, suite.digest[:12], len(suite.tasks),
            f"{recorded}/{len(suite.tasks)}" if recorded else "none", source)


def list_tools(args: list[str]) -> int:
    """Print the built-in tools (names, arguments, result formats) as Markdown; the text of docs/tools.md."""
    from lab.agents.builtin.tool_docs import tools_markdown

    if args:
        print(f"lab tools: takes no arguments, got {' '.join(args)!r}", file=sys.stderr)
        return 1
    print(tools_markdown(), end="")
    return 0
