"""Reports: build the numbers from run records, then write them out whole (SPEC M1–M9).

``build_report`` computes every figure (``build``, ``metrics``, ``repetition``);
the writers only format: ``markdown`` (report.md), ``html`` (index.html from
``templates/index.html.j2``), ``junit`` (junit.xml) and ``lines``
(runs.jsonl, events.jsonl and the ``json=true`` run line). ``stats`` holds the
estimators (Wilson score interval, pass@k, pass^k); ``closing`` the lines
printed when an eval ends (``notes`` the replay and scripted notes it shares
with the eval's banner); ``summary`` the typed summaries of the Python API
(``summarise_records`` over existing run records). The writers are imported on
first use.

May import: the bottom modules only (store, files, paths, errors, schemas).
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.files import dumps_json, encodable, publish_dir

if TYPE_CHECKING:
    from lab.report.build import build_report
    from lab.report.html import render_html, run_anchor
    from lab.report.junit import render_junit
    from lab.report.lines import derived_events, run_json_line
    from lab.report.markdown import render_markdown

# Loaded on first use: a command that finds its report up to date (the closing summary of a
# no-op eval reads report.json) never loads jinja2 and the writers.
_EXPORTS = {"build_report": "lab.report.build", "derived_events": "lab.report.lines",
            "render_html": "lab.report.html", "render_junit": "lab.report.junit",
            "render_markdown": "lab.report.markdown", "run_anchor": "lab.report.html",
            "run_json_line": "lab.report.lines"}

__all__ = ["REPORT_FILES", "build_report", "derived_events", "render_files", "render_html", "render_junit",
           "render_markdown", "run_anchor", "run_json_line", "write_report"]

def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'lab.report' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


REPORT_FILES = ("report.json", "report.md", "runs.jsonl", "events.jsonl", "index.html", "junit.xml")


def render_files(doc: dict[str, Any], records: list[dict[str, Any]],
                 events: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """The text of every report file, by name (the keys are ``REPORT_FILES``), as ``write_report`` writes it.

    Args:
        doc: the document from :func:`build_report` over ``records``.
        records: the run records (any order).
        events: lifecycle events for ``events.jsonl`` in emission order;
            None derives one ``run_finished`` event per record.
    """
    from lab.report.html import render_html
    from lab.report.junit import render_junit
    from lab.report.lines import events_jsonl, runs_jsonl
    from lab.report.markdown import render_markdown

    return {"report.json": dumps_json(doc), "report.md": render_markdown(doc, records),
            "runs.jsonl": runs_jsonl(records),
            "events.jsonl": events_jsonl(events, records), "index.html": render_html(doc, records),
            "junit.xml": render_junit(doc, records)}


def write_report(report_dir: Path, doc: dict[str, Any], records: list[dict[str, Any]],
                 events: list[dict[str, Any]] | None = None) -> None:
    """Publish every report file (``REPORT_FILES``) in ``report_dir``.

    The files are written into a staging directory beside it and renamed
    into place together: a reader never sees a half-written report.

    Args:
        report_dir: the report directory (replaced whole if it exists).
        doc: the document from :func:`build_report` over ``records``.
        records: the run records (any order).
        events: lifecycle events for ``events.jsonl``; None derives them.
    """
    from lab.report.html import iter_html
    from lab.report.junit import render_junit
    from lab.report.lines import iter_events_jsonl, iter_runs_jsonl
    from lab.report.markdown import render_markdown

    report_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{report_dir.name}.", dir=report_dir.parent))
    try:
        staging.chmod(0o755)  # mkdtemp makes it private; a report is meant to be read (CI artifacts)
        # Streamed, file by file: with 100k runs no page or JSONL file is ever one string.
        chunks: dict[str, Iterable[str]] = {
            "report.json": [dumps_json(doc)], "report.md": [render_markdown(doc, records)],
            "runs.jsonl": iter_runs_jsonl(records), "events.jsonl": iter_events_jsonl(events, records),
            "index.html": iter_html(doc, records), "junit.xml": [render_junit(doc, records)]}
        for name in REPORT_FILES:
            with open(staging / name, "w", encoding="utf-8") as fh:
                fh.writelines(encodable(chunk) for chunk in chunks[name])
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    publish_dir(staging, report_dir)
