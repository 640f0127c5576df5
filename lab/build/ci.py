"""The CI replay gate (SPEC R7): replay every bundled cassette, judge the lot.

`doit ci` / `lab ci` / `make ci` replay each bundled suite that has
cassettes (every task: a missing cassette fails the gate) and exit 2 on a divergence, 1 when a
replayed task fails or errors or nothing was replayed, 0 only when every
replay is clean and passes. Suites without cassettes are listed as skipped.
``out=DIR`` also writes ``DIR/<suite>/report.json`` and ``report.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tabulate import tabulate

from lab import paths
from lab.errors import ConfigError


def plan_ci(overrides: list[str]) -> tuple[list[Any], list[tuple[str, str]]]:
    """Prepared replays of every bundled suite with cassettes, and the skipped ones.

    Args:
        overrides: the command's ``key=value`` arguments; only ``out`` (and
            ``jobs``, ``progress``, ``json``) are accepted.

    Returns:
        (prepared evals, [(suite id, why skipped)]).

    Raises:
        ConfigError: an override other than those; SuiteError: a bad suite.
    """
    from lab.tasks import prepare

    allowed = {"out", "jobs", "progress", "json", "cassette_dir"}
    given = dict(o.split("=", 1) for o in overrides)
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise ConfigError(f"ci: unknown key {', '.join(map(repr, unknown))} (ci takes: {', '.join(sorted(allowed))})")
    cassettes = paths.from_root(given.get("cassette_dir") or paths.CASSETTES_DIR)
    prepared, skipped = [], []
    for suite_json in sorted(paths.SUITES_DIR.glob("*/suite.json")):
        suite_id = suite_json.parent.name
        if not any((cassettes / suite_id).glob("*.jsonl")):
            skipped.append((suite_id, "no cassettes"))
            continue
        extra = [f"{k}={v}" for k, v in given.items() if k != "out"]
        if "out" in given:
            extra.append(f"out={Path(given['out']).absolute() / suite_id}")
        # Every task of a recorded suite is replayed: a task whose cassette is missing
        # fails the gate ("no cassette"), it is never silently left out.
        prepared.append(prepare([f"suite.id={suite_id}", f"suite.path=suites/{suite_id}", "mode=replay",
                                 *extra]))
    return prepared, skipped


def ci_verdict(report_dirs: list[Path], skipped: list[tuple[str, str]]) -> tuple[int, str]:
    """(exit code, table) over the replayed suites' reports."""
    rows, code = [], 0
    for report_dir in report_dirs:
        doc = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
        s = doc["summary"]
        failed = s["judged"] - s["passes"]
        status = "diverged" if s["divergences"] else ("failed" if failed or s["errors"] else "ok")
        code = max(code, 2 if s["divergences"] else (1 if status == "failed" else 0))
        rows.append((doc["header"]["suiteId"], s["runs"], s["passes"], failed, s["errors"], s["divergences"], status))
    rows += [(suite_id, "—", "—", "—", "—", "—", f"skipped: {why}") for suite_id, why in skipped]
    if not report_dirs:
        code = 1
    table = tabulate(rows, headers=["suite", "replayed", "passed", "failed", "errors", "divergences", "status"],
                     tablefmt="simple")
    verdict = {0: "ci: every cassette replays cleanly and passes",
               1: "ci: FAILED: a replayed task failed or errored" if report_dirs else "ci: FAILED: nothing was replayed",
               2: "ci: FAILED: replay diverged from a recording (the harness changed what it sends)"}[code]
    return code, f"{table}\n{verdict}"
