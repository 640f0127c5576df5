"""The CI replay gate (SPEC R7): replay every bundled cassette, judge the lot.

`doit ci` / `lab ci` / `make ci` replay each bundled suite that has
cassettes (every task: a missing cassette fails the gate) and exit 2 on a divergence, 1 when a
replayed task fails or errors or nothing was replayed, 0 only when every
replay is clean and passes. Suites without cassettes are listed as skipped.
Each suite replays with the provider and model its cassette headers name.
``out=DIR`` also writes ``DIR/<suite>/report.json`` and ``report.md``.
``suite_dir=DIR`` replays the suites under DIR instead of the bundled ones,
``suite=ID`` only one suite; ``cassette_dir=DIR`` reads the recordings from
``DIR/<suite id>/`` and is accepted only when a single suite is replayed (with
several, the suites missing from DIR would be skipped, not checked).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab import paths
from lab.build.actions import ci_gate_action
from lab.build.cmdline import cmdline_overrides, progress_requested
from lab.build.creators import creator
from lab.build.graph import Prepared, eval_tasks, prepare
from lab.errors import ConfigError
from lab.suites.source import cassette_root

CI_KEYS = ("cassette_dir", "jobs", "json", "out", "progress", "suite", "suite_dir", "yes")
"""Every key ``ci`` takes (``lab ci --help`` describes each, lab.cli.ci); any other is refused."""


def plan_ci(overrides: list[str]) -> tuple[list[Any], list[tuple[str, str]]]:
    """Prepared replays of every selected suite with cassettes, and the skipped ones.

    Args:
        overrides: the command's ``key=value`` arguments: ``suite_dir=DIR``
            (replay the suites under DIR instead of the bundled ones; a
            third-party suite needs ``yes=true`` without a terminal),
            ``suite=ID`` (only that suite), ``cassette_dir=DIR`` (recordings
            under ``DIR/<suite id>/``; only when a single suite is replayed),
            ``out``, ``jobs``, ``progress``, ``json``.

    Returns:
        (prepared evals, [(suite id, why skipped)]).

    Raises:
        ConfigError: another key, an unknown suite, an empty suite_dir, or
            cassette_dir with more than one suite; SuiteError: a bad suite.
    """
    given = dict(o.split("=", 1) for o in overrides)
    unknown = sorted(set(given) - set(CI_KEYS))
    if unknown:
        raise ConfigError(f"ci: unknown key {', '.join(map(repr, unknown))} (ci takes: {', '.join(CI_KEYS)}; "
                          "see `lab ci --help`)")
    selected = _selected_suites(given)
    if given.get("cassette_dir") and len(selected) != 1:
        raise ConfigError(f"ci: cassette_dir= holds the recordings of a single suite, but {len(selected)} suites "
                          "are selected; name one with suite=ID (or give a suite_dir holding one suite)")
    suite_dir = Path(given["suite_dir"]).absolute() if given.get("suite_dir") else paths.SUITES_DIR
    prepared, skipped = [], []
    for suite_id, source in selected:
        # A suite outside the checkout keeps its recordings beside it (<suite>/cassettes/<id>/).
        cassettes = cassette_root(suite_dir / suite_id, given.get("cassette_dir"))
        if not any((cassettes / suite_id).glob("*.jsonl")):
            skipped.append((suite_id, "no cassettes"))
            continue
        extra = [f"{k}={v}" for k, v in given.items() if k not in ("out", "suite", "suite_dir")]
        extra += recorded_provider(cassettes / suite_id)
        if "out" in given:
            extra.append(f"out={Path(given['out']).absolute() / suite_id}")
        # Every task of a recorded suite is replayed: a task whose cassette is missing
        # fails the gate ("no cassette"), it is never silently left out.
        prepared.append(prepare([*source, "mode=replay", *extra]))
    return prepared, skipped


def recorded_provider(cassettes: Path) -> list[str]:
    """Overrides selecting the provider and model a suite's cassettes were recorded with
    (:func:`lab.replay.recorded.recorded_provider`; its errors name ``ci``)."""
    from lab.replay.recorded import recorded_provider as recorded

    return recorded(cassettes, who="ci")


def _selected_suites(given: dict[str, str]) -> list[tuple[str, list[str]]]:
    """[(suite id, overrides that select it)]: the bundled suites, or those under suite_dir; suite= narrows."""
    suite_dir = given.get("suite_dir")
    if suite_dir:
        root = Path(suite_dir).absolute()
        found = sorted(p.parent.name for p in root.glob("*/suite.json"))
        if not found:
            raise ConfigError(f"ci: suite_dir {root}: no suite in it (expected DIR/<suite id>/suite.json)")
        suites = [(sid, [f"suite_dir={root}", f"suite={sid}"]) for sid in found]
    else:
        suites = [(p.parent.name, [f"suite.id={p.parent.name}", f"suite.path=suites/{p.parent.name}"])
                  for p in sorted(paths.SUITES_DIR.glob("*/suite.json"))]
    wanted = given.get("suite")
    if wanted:
        suites = [s for s in suites if s[0] == wanted]
        if not suites:
            where = f"in {suite_dir}" if suite_dir else "among the bundled suites"
            raise ConfigError(f"ci: suite {wanted!r} not found {where}")
    return suites


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
