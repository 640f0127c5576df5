"""doit tasks that share results: ``doit compare`` and ``doit export`` (SPEC K1, E1).

    doit compare base=A cand=B [out=DIR] [tolerance=0.05]
    doit export run=REPORT out=FILE [force=true] [redact=true]

Unlike ``eval``, these take their own variables, not Hydra overrides; an
unknown variable is a one-line usage error (exit 1). ``base``, ``cand`` and
``run`` are each a ``report.json``, its directory or a run id, found as
``lab compare`` finds them (:func:`lab.store.resolve_report`). The comparison is a file target
(``DIR/comparison.json`` and ``comparison.md``; default DIR
``<data dir>/comparisons/<base run id>-vs-<cand run id>``) over both report
files, so it is rebuilt only when a report or the tolerance changes. The
export bundle ``out`` is a target over the run's report.json, runs.jsonl and
report.md. Under doit every failure (incompatible reports, a secret, an
existing file) exits 1; ``lab compare`` gives incompatible reports exit 3.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab import paths
from lab.build.cmdline import cmdline_overrides
from lab.build.creators import creator
from lab.errors import ConfigError, LabError

COMPARE_VARS = ("base", "cand", "out", "tolerance")
EXPORT_VARS = ("run", "out", "force", "redact")


def _variables(allowed: tuple[str, ...], required: tuple[str, ...], usage: str) -> dict[str, str]:
    """doit's ``key=value`` variables, checked against ``allowed`` and ``required``.

    Raises:
        ConfigError: an unknown or missing variable (one line with the usage).
    """
    variables = dict(o.split("=", 1) for o in cmdline_overrides())
    unknown = [k for k in variables if k not in allowed]
    if unknown:
        raise ConfigError(f"unknown variable {unknown[0]!r} (variables: {', '.join(allowed)}); usage: {usage}")
    missing = [k for k in required if not variables.get(k)]
    if missing:
        raise ConfigError(f"missing {missing[0]}=…; usage: {usage}")
    return variables


def task_compare() -> Iterator[dict[str, Any]]:
    """Compare two reports into comparison.json/.md/.html (doit compare base=… cand=… [out=DIR] [tolerance=…])."""
    yield from creator("compare", _compare_spec, _compare_tasks, prefix="doit compare: ")


def _compare_tasks(spec: tuple[Path, Path, Path, float, str]) -> Iterator[dict[str, Any]]:
    from doit.tools import config_changed

    from lab.compare.verdicts import COMPARISON_SCHEMA_VERSION

    base, cand, out_dir, tolerance, name = spec
    yield {"name": name, "actions": [(_compare_action, [base, cand, out_dir, tolerance])],
           "file_dep": [str(base), str(cand)],
           "targets": [str(out_dir / "comparison.json"), str(out_dir / "comparison.md"),
                       str(out_dir / "comparison.html")],
           "uptodate": [config_changed({"tolerance": tolerance, "schemaVersion": COMPARISON_SCHEMA_VERSION})],
           "meta": {"uptodate_note": f"comparison up to date: {out_dir / 'comparison.md'} "
                                     f"(and comparison.html; the reports have not changed)"},
           "verbosity": 2}


def _compare_spec() -> tuple[Path, Path, Path, float, str]:
    """(base report.json, cand report.json, out dir, tolerance, task name) from the variables."""
    from lab.compare.verdicts import DEFAULT_TOLERANCE
    from lab.config.options import fraction
    from lab.store import read_report, resolve_report

    variables = _variables(COMPARE_VARS, ("base", "cand"), "doit compare base=A cand=B [out=DIR] [tolerance=0.05]")
    tolerance = fraction(variables, "tolerance", DEFAULT_TOLERANCE)
    data = paths.data_dir()
    base, cand = resolve_report(variables["base"], data), resolve_report(variables["cand"], data)
    ids = [read_report(p)["header"].get("runId") or p.parent.name for p in (base, cand)]
    name = f"{ids[0]}-vs-{ids[1]}"
    out_dir = Path(variables["out"]).absolute() if variables.get("out") else data / "comparisons" / name
    return base, cand, out_dir, tolerance, name


def _compare_action(base: Path, cand: Path, out_dir: Path, tolerance: float) -> Any:
    from doit.exceptions import TaskFailed

    from lab.compare.verdicts import compare_reports, write_comparison
    from lab.store import read_report

    try:
        doc = compare_reports(read_report(base), read_report(cand), tolerance=tolerance)
        _, md_path = write_comparison(out_dir, doc, reports=(base.parent, cand.parent))
    except (LabError, OSError) as exc:
        print(f"doit compare: {exc}", file=sys.stderr)
        return TaskFailed(str(exc), report=False)
    print(f"comparison: {md_path} (verdict: {doc['aggregate']['verdict']}); "
          f"picture: {md_path.with_suffix('.html')}", flush=True)
    return None


def task_export() -> Iterator[dict[str, Any]]:
    """Export one run as a scrubbed, secret-checked JSON bundle (doit export run=REPORT out=FILE [force=true] [redact=true])."""
    yield from creator("export", _export_spec, lambda spec: _export_tasks(*spec), prefix="doit export: ")


def _export_tasks(report: Path, out: Path, force: bool, redact: bool, name: str) -> Iterator[dict[str, Any]]:
    from doit.tools import config_changed

    from lab.export.bundle import BUNDLE_SCHEMA_VERSION

    yield {"name": name, "actions": [(_export_action, [report, out, force, redact])],
           "file_dep": [str(report), *(str(report.parent / n) for n in ("runs.jsonl", "report.md"))],
           "targets": [str(out)],
           "uptodate": [False] if force else [config_changed({"schemaVersion": BUNDLE_SCHEMA_VERSION,
                                                               "redact": redact})],
           "verbosity": 2}


def _export_spec() -> tuple[Path, Path, bool, bool, str]:
    """(absolute report.json, out file, force, redact, task name: the report's run id) from the variables."""
    from lab.config.options import flag
    from lab.store import read_report, resolve_report

    variables = _variables(EXPORT_VARS, ("run", "out"),
                           "doit export run=REPORT out=FILE [force=true] [redact=true]")
    report = resolve_report(variables["run"], paths.data_dir()).absolute()
    name = read_report(report)["header"].get("runId") or report.parent.name
    return report, Path(variables["out"]).absolute(), flag(variables, "force"), flag(variables, "redact"), name


def _export_action(report: Path, out: Path, force: bool, redact: bool) -> Any:
    from doit.exceptions import TaskFailed

    from lab.export.bundle import export_run

    try:
        result = export_run(str(report), out, data=paths.data_dir(), env=os.environ, force=force, redact=redact)
    except (LabError, OSError) as exc:
        print(f"doit export: {exc}", file=sys.stderr)
        return TaskFailed(str(exc), report=False)
    print(f"exported {result.run_id} ({result.report_dir}) to {result.out} "
          f"({result.runs} runs, {result.size_bytes} bytes)", flush=True)
    return None
