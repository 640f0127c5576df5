"""The CI replay gate (SPEC R7): replay every bundled cassette, judge the lot.

`doit ci` / `lab ci` / `make ci` replay each bundled suite that has
cassettes (every task: a missing cassette fails the gate) and exit 2 on a divergence, 1 when a
replayed task fails or errors or nothing was replayed, 0 only when every
replay is clean and passes. Suites without cassettes are listed as skipped.
``out=DIR`` also writes ``DIR/<suite>/report.json`` and ``report.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab import paths
from lab.build.actions import ci_gate_action
from lab.build.graph import Prepared, cmdline_overrides, creator, eval_tasks, prepare, progress_requested
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


def task_ci() -> Iterator[dict[str, Any]]:
    """Replay every bundled cassette; exit 2 on a divergence, 1 on a failure (doit ci [out=DIR])."""
    yield from creator("ci", lambda: plan_ci(cmdline_overrides()), lambda planned: ci_tasks(*planned))


def ci_tasks(suites: list[Prepared], skipped: list[tuple[str, str]]) -> Iterator[dict[str, Any]]:
    """Every recorded suite's replay (printing, not gating), then one gate over them all."""
    summaries = []
    for prep in suites:
        prep.basename = "ci"
        yield from eval_tasks(prep, gate=False)
        summaries.append(f"ci:{prep.run_id}.summary")
    report_dirs = [p.report_dir for p in suites]
    yield {"name": "gate", "actions": [(ci_gate_action, [report_dirs, skipped, progress_requested()])],
           "task_dep": summaries, "uptodate": [False], "verbosity": 2}
