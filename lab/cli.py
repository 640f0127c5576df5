"""The ``lab`` command: a thin front over the doit graph and the library.

    lab list                          bundled suites, versions, digests, cassettes
    lab run [OVERRIDES…]              same as `doit eval OVERRIDES…`
    lab record [OVERRIDES…]           same as `doit record OVERRIDES…`

Overrides use Hydra syntax (``suite=core k=5 mode=replay provider.model=x``).
Exit codes: 0 completed (whichever tasks passed), 1 usage or infrastructure
error, 2 replay divergence, 130 cancelled.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = __doc__ or ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lab`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE.strip())
        return 0 if args else 1
    command, rest = args[0], args[1:]
    handlers = {"run": lambda: _doit("eval", rest), "record": lambda: _doit("record", rest),
                "list": lambda: _list(rest)}
    if command not in handlers:
        print(f"lab: unknown command {command!r}; try `lab --help`", file=sys.stderr)
        return 1
    try:
        return handlers[command]()
    except KeyboardInterrupt:
        print("lab: cancelled", file=sys.stderr)
        return 130


def _doit(basename: str, overrides: list[str]) -> int:
    """Run doit task ``basename`` with ``overrides`` as variables; map its result."""
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    from lab import tasks

    bad = [o for o in overrides if "=" not in o or o.startswith("-")]
    if bad:
        print(f"lab {basename}: expected key=value overrides, got {' '.join(bad)!r}", file=sys.stderr)
        return 1
    tasks.REQUESTED = {basename}
    tasks.OUTCOME.clear()
    namespace = {"task_eval": tasks.task_eval, "task_record": tasks.task_record,
                 "DOIT_CONFIG": tasks.doit_config()}
    result = DoitMain(ModuleTaskLoader(namespace)).run([basename, *overrides])
    if "code" in tasks.OUTCOME:
        return int(tasks.OUTCOME["code"])
    return 0 if result == 0 else 1


def _list(overrides: list[str]) -> int:
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


if __name__ == "__main__":
    sys.exit(main())
