"""Reports: build the numbers from run records, then write them out whole (SPEC M1–M9).

``build_report`` computes every figure (``build``, tallied in one ordered
pass by ``tally`` with ``metrics`` and ``repetition``); the writers only
format: ``markdown`` (report.md, its tables by ``tables``), ``html``
(index.html from ``templates/index.html.j2``, its charts by ``charts`` laid
out by ``layout``, run evidence by ``evidence``),
``junit`` (junit.xml), ``jsondoc`` (report.json) and ``lines`` (runs.jsonl,
events.jsonl and the ``json=true`` run line). ``stream`` writes them all in
one ordered pass over the records, keeping long lists in ``spool`` files:
``write_report_from_files`` is what an eval's report task calls. ``stats``
holds the estimators (Wilson score interval, pass@k, pass^k); ``closing``
the lines printed when an eval ends (``notes`` the replay and scripted notes
it shares with the eval's banner); ``summary`` the typed summaries of the
Python API (``summarise_records`` over existing run records). The writers
are imported on first use.

May import: the bottom modules only (store, files, paths, errors, schemas).
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.report.build import build_report
    from lab.report.html import render_html, run_anchor
    from lab.report.junit import render_junit
    from lab.report.lines import derived_events, run_json_line
    from lab.report.markdown import render_markdown
    from lab.report.stream import write_report_from_files

__all__ = ["REPORT_FILES", "build_report", "derived_events", "render_files", "render_html", "render_junit",
           "render_markdown", "run_anchor", "run_json_line", "write_report", "write_report_from_files"]

# Loaded on first use: a command that finds its report up to date (the closing summary of a
# no-op eval reads report.json) never loads jinja2 and the writers.
_EXPORTS = {"build_report": "lab.report.build", "derived_events": "lab.report.lines",
            "render_html": "lab.report.html", "render_junit": "lab.report.junit",
            "render_markdown": "lab.report.markdown", "run_anchor": "lab.report.html",
            "run_json_line": "lab.report.lines", "write_report_from_files": "lab.report.stream"}


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
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        write_report(out, doc, records, events)
        return {name: (out / name).read_text(encoding="utf-8") for name in REPORT_FILES}


def write_report(report_dir: Path, doc: dict[str, Any], records: list[dict[str, Any]],
                 events: list[dict[str, Any]] | None = None) -> None:
    """Publish every report file (``REPORT_FILES``) in ``report_dir``.

    The files are written into a staging directory beside it and renamed
    into place together: a reader never sees a half-written report. A report
    of more than 1000 runs also gets its run pages (``pages/runs-0001.html``
    …, see ``lab.report.evidence``). For records on disk,
    :func:`write_report_from_files` does the same without loading them all.

    Args:
        report_dir: the report directory (replaced whole if it exists).
        doc: the document from :func:`build_report` over ``records``.
        records: the run records (any order).
        events: lifecycle events for ``events.jsonl``; None derives them.
    """
    from lab.files import dumps_line
    from lab.report.build import sort_records
    from lab.report.lines import derived_events
    from lab.report.stream import publish

    chosen = derived_events(records) if events is None else events
    publish(report_dir, sort_records(records), len(records), doc=doc,
            event_lines=(dumps_line(e) for e in chosen))
