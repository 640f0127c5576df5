"""`lab list`: the bundled suites with version, digest, task count and cassettes."""

from __future__ import annotations


def list_suites(overrides: list[str]) -> int:
    from tabulate import tabulate

    from lab import paths
    from lab.errors import SuiteError
    from lab.suite import load_suite

    suite_dirs = sorted(p.parent for p in paths.SUITES_DIR.glob("*/suite.json"))
    if not suite_dirs:
        print(f"no suites found under {paths.SUITES_DIR}")
        return 0
    rows = []
    for suite_dir in suite_dirs:
        try:
            suite = load_suite(suite_dir)
        except SuiteError as exc:
            rows.append((suite_dir.name, "invalid", "", "", exc.problems[0]))
            continue
        cassettes = paths.CASSETTES_DIR / suite.id
        recorded = sum(1 for t in suite.tasks if (cassettes / f"{t.id}.jsonl").exists())
        rows.append((suite.id, suite.version, suite.digest[:12], len(suite.tasks),
                     f"{recorded}/{len(suite.tasks)}" if recorded else "none"))
    print(tabulate(rows, headers=["suite", "version", "digest", "tasks", "cassettes"], tablefmt="simple"))
    return 0
